/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command bench runs the side-by-side benchmark of test/bench in full and
// prints its table: see hack/bench.sh (make bench).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/kube-events/events-apiserver/test/bench"
)

func main() {
	cfg := bench.Full()
	watchers := flag.String("watchers", joinInts(cfg.Watchers), "comma-separated numbers of selective watchers (0: the same load without watchers; empty: no watcher phases)")
	flag.StringVar(&cfg.Assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "envtest assets directory (kube-apiserver, etcd)")
	flag.StringVar(&cfg.ServerBinary, "server-binary", "bin/events-apiserver", "events-apiserver binary")
	flag.IntVar(&cfg.Writers, "writers", cfg.Writers, "concurrent writers")
	flag.Int64Var(&cfg.CreatesPerMode, "creates-per-mode", cfg.CreatesPerMode, "creates measured per version and media type")
	flag.Int64Var(&cfg.Events, "events", cfg.Events, "events in the store when lists and memory are measured")
	flag.Int64Var(&cfg.LargeEvents, "large-events", cfg.LargeEvents, "events the store is filled to after the watcher phases, for the memory reading at scale (0: none)")
	flag.IntVar(&cfg.ListSamples, "list-samples", cfg.ListSamples, "lists timed per selector, at least")
	flag.DurationVar(&cfg.ListDuration, "list-duration", cfg.ListDuration, "how long lists are timed per selector, at least")
	flag.IntVar(&cfg.AnchorMaxWatchers, "anchor-max-watchers", cfg.AnchorMaxWatchers, "most watchers put on kube-apiserver (no events watch cache: one etcd watch each)")
	flag.DurationVar(&cfg.WatchWarmup, "watch-warmup", cfg.WatchWarmup, "create load, not measured, per watcher phase once the watchers are open")
	flag.DurationVar(&cfg.WatchDuration, "watch-duration", cfg.WatchDuration, "create load measured per watcher phase")
	flag.Float64Var(&cfg.WatchRate, "watch-rate", cfg.WatchRate, "creates/s the watcher phases are paced at, in all (0: as fast as the writers go); times deliveries on a server that is not saturated")
	flag.DurationVar(&cfg.DeliveryTimeout, "delivery-timeout", cfg.DeliveryTimeout, "how long events may take to reach their watchers after the load")
	flag.IntVar(&cfg.StallLists, "stall-lists", cfg.StallLists, "lists of every event run one after the other at -large-events on events-apiserver while selective watchers are measured (0: none)")
	flag.IntVar(&cfg.StallWatchers, "stall-watchers", cfg.StallWatchers, "selective watchers measured during the lists of every event")
	flag.Float64Var(&cfg.StallRate, "stall-rate", cfg.StallRate, "creates/s during the lists of every event")
	flag.IntVar(&cfg.CancelSamples, "cancel-samples", cfg.CancelSamples, "lists of every event canceled by their client once the server scans, timed to the scan's end")
	flag.BoolVar(&cfg.SkipAnchor, "skip-anchor", false, "measure events-apiserver alone (for profiling; no ratios)")
	flag.StringVar(&cfg.ProfileDir, "profile-dir", "", "write events-apiserver's heap profiles and CPU profiles (fill, lists, each watcher phase, with the generator's) here")
	serverEnv := flag.String("server-env", "", "comma-separated NAME=VALUE pairs added to events-apiserver's environment (e.g. GOMEMLIMIT=450MiB)")
	serverArgs := flag.String("server-args", "", "comma-separated flags added to events-apiserver's (e.g. --store-cache=watch-cache)")
	flag.Parse()
	if *serverEnv != "" {
		cfg.ServerEnv = strings.Split(*serverEnv, ",")
	}
	if *serverArgs != "" {
		cfg.ServerArgs = strings.Split(*serverArgs, ",")
	}
	cfg.Log = os.Stderr
	var err error
	if cfg.Watchers, err = parseInts(*watchers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(cfg bench.Config) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	dir, err := os.MkdirTemp("", "events-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.WorkDir = dir
	results, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return bench.WriteTable(os.Stdout, cfg, results)
}

func joinInts(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return out, nil // no watcher phases
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--watchers: %w", err)
		}
		out = append(out, n)
	}
	return out, nil
}
