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

// Package e2e installs events-apiserver as an operator would, on a real
// one-node cluster built from binaries (hack/cluster-assets.sh) inside a
// network, mount and PID sandbox of its own: the images `make image` builds
// (and an etcd and a sandbox image packed the same way), the README's
// commands (`kubectl apply -k`), and the events a real kubelet, scheduler
// and controllers write. It needs root and the host packages
// hack/cluster-packages.sh installs; `make test-e2e` runs it.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The images the suite imports; the names are the manifests'. The
// server's image is the release's (make release), under the name the
// overlays and the chart give it too.
const (
	serverImage = "docker.io/library/events-apiserver:latest"
	// releaseVersion and releaseImage are the release the suite builds and
	// installs (TestDefaultOverlay applies its manifest).
	releaseVersion    = "v0.0.0-e2e"
	releaseRepository = "ghcr.io/kube-events/events-apiserver" // make release's default
	releaseImage      = releaseRepository + ":" + releaseVersion
)

// suite is what TestMain set up for the scenarios.
var suite struct {
	root    string
	cluster *Cluster
	// images are the archives, by reference.
	images map[string]string
	// etcdImage is the bundled etcd's image reference in the manifests.
	etcdImage string
	// release is the directory of the release make release built.
	release string
}

func TestMain(m *testing.M) {
	if os.Getenv(sandboxEnv) == "" {
		// The host packages install out here: the sandbox has a network
		// namespace of its own, with no route to the package archive.
		if err := installHostPackages(); err != nil {
			fmt.Fprintln(os.Stderr, "test/e2e:", err)
			os.Exit(1)
		}
		os.Exit(runInSandbox())
	}
	os.Exit(runSuite(m))
}

// runSuite brings the cluster up, runs the scenarios and tears it down.
func runSuite(m *testing.M) int {
	ctx := context.Background()
	start := time.Now()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "test/e2e:", err)
		return 1
	}
	if err := prepareSandbox(); err != nil {
		return fail(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	suite.root = root
	assetsStart := time.Now()
	out, err := exec.Command(filepath.Join(root, "hack", "cluster-assets.sh")).Output()
	if err != nil {
		return fail(fmt.Errorf("hack/cluster-assets.sh: %w", err))
	}
	assets := strings.TrimSpace(string(out))
	fmt.Printf("e2e: cluster binaries ready in %s (%s)\n", time.Since(assetsStart).Round(time.Second), assets)

	imagesStart := time.Now()
	imageDir, err := os.MkdirTemp("", "events-e2e-images-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(imageDir)
	if err := buildImages(ctx, root, assets, imageDir); err != nil {
		return fail(err)
	}
	fmt.Printf("e2e: images built in %s\n", time.Since(imagesStart).Round(time.Second))

	clusterStart := time.Now()
	c, err := StartCluster(ctx, assets, ClusterOptions{})
	if err != nil {
		return fail(err)
	}
	suite.cluster = c
	for _, t := range c.Timings {
		fmt.Printf("e2e: %-24s ready in %s\n", t.Component, t.Took.Round(time.Millisecond))
	}
	fmt.Printf("e2e: node Ready %s after the first component started\n", time.Since(clusterStart).Round(time.Millisecond))
	code := 0
	for ref, archive := range suite.images {
		if err := c.ImportImage(ctx, archive); err != nil {
			code = fail(fmt.Errorf("importing %s: %w", ref, err))
		}
	}
	if code == 0 {
		// The release's manifest names the image by digest, the overlays
		// and the chart by tag: both names, as pulls would leave them.
		byDigest, err := releaseImageByDigest()
		if err == nil {
			err = c.TagImage(ctx, releaseImage, byDigest)
		}
		if err == nil {
			err = c.TagImage(ctx, releaseImage, serverImage)
		}
		if err != nil {
			code = fail(err)
		}
	}
	if code == 0 {
		code = m.Run()
	}
	if code != 0 || os.Getenv("EVENTS_E2E_KEEP_LOGS") != "" {
		keep := filepath.Join(os.TempDir(), "events-e2e-logs-"+filepath.Base(c.Dir))
		if err := copyLogs(c.path("logs"), keep); err == nil {
			fmt.Printf("e2e: component logs kept in %s\n", keep)
		}
	}
	stopStart := time.Now()
	if err := c.Stop(ctx); err != nil {
		return fail(fmt.Errorf("teardown: %w", err))
	}
	if err := cleanSandbox(); err != nil {
		return fail(fmt.Errorf("teardown: %w", err))
	}
	fmt.Printf("e2e: torn down in %s; whole suite %s\n", time.Since(stopStart).Round(time.Millisecond), time.Since(start).Round(time.Second))
	return code
}

// installHostPackages runs hack/cluster-packages.sh, which installs what
// the cluster needs from the host (containerd, runc, the CNI plugins,
// iptables) when one is missing.
func installHostPackages() error {
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "cluster-packages.sh"))
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil // runInSandbox says that the suite needs root
	}
	cmd := exec.Command(script)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/cluster-packages.sh: %w", err)
	}
	return nil
}

// copyLogs copies the components' logs out of the cluster directory.
func copyLogs(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// releaseImageByDigest is the server's image as the release's manifest
// names it: <repository>@sha256:<digest>.
func releaseImageByDigest() (string, error) {
	manifest, err := os.ReadFile(filepath.Join(suite.release, "events-apiserver.yaml"))
	if err != nil {
		return "", err
	}
	match := releaseImagePattern.FindSubmatch(manifest)
	if match == nil {
		return "", fmt.Errorf("no image by digest of %s in the release's manifest", releaseImage)
	}
	return string(match[1]), nil
}

// releaseImagePattern finds the server's image in a release's manifest.
var releaseImagePattern = regexp.MustCompile(`(?m)^\s*image:\s*(` + regexp.QuoteMeta(releaseRepository) + `@sha256:[0-9a-f]{64})\s*$`)

// etcdImagePattern finds the bundled etcd's image in its StatefulSet.
var etcdImagePattern = regexp.MustCompile(`(?m)^\s*image:\s*(\S*etcd\S*)\s*$`)

// etcdVersionPattern finds the version in etcd --version's output.
var etcdVersionPattern = regexp.MustCompile(`(?m)^etcd Version: (\S+)$`)

// archiveImagePattern finds VictoriaLogs' image in its StatefulSet.
var archiveImagePattern = regexp.MustCompile(`(?m)^\s*image:\s*(\S*victoria-logs\S*)\s*$`)

// buildImages builds the server's image with `make image`, and packs the
// static etcd and victoria-logs (under the names their StatefulSets run)
// and the sandbox program the same way (hack/tools/imagebuild).
func buildImages(ctx context.Context, root, assets, dir string) error {
	statefulset, err := os.ReadFile(filepath.Join(root, "artifacts", "components", "bundled-etcd", "statefulset.yaml"))
	if err != nil {
		return err
	}
	match := etcdImagePattern.FindSubmatch(statefulset)
	if match == nil {
		return fmt.Errorf("no etcd image in components/bundled-etcd/statefulset.yaml")
	}
	suite.etcdImage = string(match[1])
	// The tag packs the etcd built for it (etcd-static, at
	// hack/cluster-assets.sh's ETCD_VERSION): it must name that version, so
	// that the image users run is the one tested.
	etcdVersion, err := exec.CommandContext(ctx, filepath.Join(assets, "etcd-static"), "--version").Output()
	if err != nil {
		return fmt.Errorf("etcd-static --version: %w", err)
	}
	if m := etcdVersionPattern.FindSubmatch(etcdVersion); m == nil || !strings.HasSuffix(suite.etcdImage, ":"+string(m[1])+"-0") {
		return fmt.Errorf("components/bundled-etcd runs %s, not the etcd built for it: %s", suite.etcdImage, etcdVersion)
	}
	archiveManifest, err := os.ReadFile(filepath.Join(root, "artifacts", "components", "victorialogs", "statefulset.yaml"))
	if err != nil {
		return err
	}
	match = archiveImagePattern.FindSubmatch(archiveManifest)
	if match == nil {
		return fmt.Errorf("no victoria-logs image in components/victorialogs/statefulset.yaml")
	}
	// Docker Hub's short form, as the kubelet resolves it.
	archiveImage := "docker.io/" + string(match[1])
	victoriaLogs, err := exec.CommandContext(ctx, filepath.Join(root, "hack", "victorialogs-assets.sh")).Output()
	if err != nil {
		return fmt.Errorf("hack/victorialogs-assets.sh: %w", err)
	}
	suite.release = filepath.Join(dir, "release")
	suite.images = map[string]string{
		releaseImage:    filepath.Join(suite.release, "events-apiserver-image-"+releaseVersion+".tar"),
		suite.etcdImage: filepath.Join(dir, "etcd.tar"),
		sandboxImage:    filepath.Join(dir, "pause.tar"),
		recorderImage:   filepath.Join(dir, "recorder.tar"),
		archiveImage:    filepath.Join(dir, "victoria-logs.tar"),
	}
	run := func(env []string, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run([]string{"RELEASE_DIR=" + suite.release}, "make", "release", "VERSION="+releaseVersion); err != nil {
		return err
	}
	// Built as the release's server is (CGO_ENABLED=0, -trimpath), which
	// left client-go's packages in the build cache.
	pause, recorder := filepath.Join(dir, "pause"), filepath.Join(dir, "recorder")
	for binary, pkg := range map[string]string{pause: "./test/e2e/pause", recorder: "./test/e2e/recorder"} {
		if err := run([]string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, pkg); err != nil {
			return err
		}
	}
	for _, img := range []struct{ binary, path, title, ref string }{
		{filepath.Join(assets, "etcd-static"), "/usr/local/bin/etcd", "etcd", suite.etcdImage},
		{pause, "/pause", "pause", sandboxImage},
		{recorder, "/recorder", "recorder", recorderImage},
		// The pinned victoria-logs (pure Go, static), at the official
		// image's entrypoint.
		{filepath.Join(strings.TrimSpace(string(victoriaLogs)), "victoria-logs"), "/victoria-logs-prod", "victoria-logs", archiveImage},
	} {
		if err := run(nil, "go", "run", "-C", "hack/tools", "./imagebuild",
			"--binary", img.binary, "--path", img.path, "--title", img.title,
			"--tag", img.ref, "--output", suite.images[img.ref]); err != nil {
			return err
		}
	}
	return nil
}
