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

package app

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
)

// The values of --archive.
const (
	// ArchiveEmbedded keeps the history in this process, with VictoriaLogs'
	// storage library, in --archive-dir: for one replica.
	ArchiveEmbedded = "embedded"
	// ArchiveURL keeps it in the VictoriaLogs service at --archive-url,
	// which every replica reads and the elected one writes.
	ArchiveURL = "url"
	// ArchiveNone keeps no history: events live for --event-ttl.
	ArchiveNone = "none"
)

// ArchiveOptions configure the history of events (see pkg/archive).
type ArchiveOptions struct {
	// Mode is --archive; empty chooses embedded when the server runs its
	// embedded etcd (one replica, with a --data-dir) and none otherwise.
	Mode string
	// URL is the VictoriaLogs service of Mode url; SelectURL, when set,
	// is where queries go instead (a cluster's vlselect, URL its vlinsert).
	URL, SelectURL string
	// Dir is the embedded archive's directory, <data-dir>/archive when empty.
	Dir string
	// Retention is how long archived events are kept.
	Retention time.Duration
	// ServiceFlushInterval is the service's -inmemoryDataFlushInterval,
	// which the archiver waits out before it checkpoints.
	ServiceFlushInterval time.Duration
}

func newArchiveOptions() ArchiveOptions {
	return ArchiveOptions{Retention: victorialogs.DefaultRetention, ServiceFlushInterval: victorialogs.DefaultServiceFlushInterval}
}

func (a *ArchiveOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Mode, "archive", a.Mode, "Where the history of events is kept, for lists with the field selector history.since=<when>: "+
		"embedded (in this process, in --archive-dir; for one replica), url (the VictoriaLogs service at --archive-url; for several replicas) or none. "+
		"Defaults to embedded with the embedded etcd, none otherwise.")
	fs.StringVar(&a.URL, "archive-url", a.URL, "Base URL of the VictoriaLogs service of --archive=url (victoria-logs, or a cluster's vlinsert).")
	fs.StringVar(&a.SelectURL, "archive-select-url", a.SelectURL, "Base URL queries go to instead of --archive-url (a VictoriaLogs cluster's vlselect).")
	fs.StringVar(&a.Dir, "archive-dir", a.Dir, "Directory of the embedded archive; <data-dir>/archive, beside the embedded etcd's data, when empty.")
	fs.DurationVar(&a.Retention, "archive-retention", a.Retention, "How long archived events stay searchable, by their last observation; at least 24h. "+
		"With --archive=url it must match the service's -retentionPeriod.")
	fs.DurationVar(&a.ServiceFlushInterval, "archive-service-flush-interval", a.ServiceFlushInterval, "The -inmemoryDataFlushInterval of the VictoriaLogs service of --archive=url: "+
		"the archiver waits up to a minute and twice this for what it appended to be on disk before it gives up a checkpoint and appends again.")
}

// completed returns the options with the mode and the directory resolved
// for a server with (or without) the embedded etcd and the data directory.
func (a ArchiveOptions) completed(embeddedEtcd bool, dataDir string) ArchiveOptions {
	if a.Mode == "" {
		a.Mode = ArchiveNone
		if embeddedEtcd {
			a.Mode = ArchiveEmbedded
		}
	}
	if a.Mode == ArchiveEmbedded && a.Dir == "" && dataDir != "" {
		a.Dir = filepath.Join(dataDir, "archive")
	}
	return a
}

func (a *ArchiveOptions) validate() []error {
	var errs []error
	switch a.Mode {
	case ArchiveEmbedded:
		if a.Dir == "" {
			errs = append(errs, fmt.Errorf("--archive=embedded needs --archive-dir or --data-dir"))
		}
	case ArchiveURL:
		if a.URL == "" {
			errs = append(errs, fmt.Errorf("--archive=url needs --archive-url"))
		}
	case ArchiveNone, "":
	default:
		errs = append(errs, fmt.Errorf("--archive must be embedded, url or none, got %q", a.Mode))
	}
	if a.ServiceFlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("--archive-service-flush-interval must be positive, got %v", a.ServiceFlushInterval))
	}
	if a.Mode != ArchiveNone && a.Mode != "" && a.Retention < 24*time.Hour {
		errs = append(errs, fmt.Errorf("--archive-retention must be at least 24h, got %v", a.Retention))
	}
	return errs
}

// config is the server's archive configuration, nil for none: the server
// opens the archive and, at compactionInterval (the generic storage's,
// which the caller turns off), compacts etcd itself, never past the
// archiver's checkpoint.
func (a ArchiveOptions) config(compactionInterval time.Duration) *apiserver.ArchiveConfig {
	if a.Mode != ArchiveEmbedded && a.Mode != ArchiveURL {
		return nil
	}
	return &apiserver.ArchiveConfig{Open: a.open, CompactionInterval: compactionInterval}
}

// open opens the archive of the options; the caller closes it.
func (a ArchiveOptions) open(ctx context.Context) (archive.Archive, error) {
	klog.FromContext(ctx).Info("Archiving events", "archive", a.Mode, "dir", a.Dir, "url", a.URL, "retention", a.Retention)
	switch a.Mode {
	case ArchiveEmbedded:
		e, err := victorialogs.OpenEmbedded(ctx, victorialogs.EmbeddedConfig{Dir: a.Dir, Retention: a.Retention})
		if err != nil {
			return nil, fmt.Errorf("opening the archive in %s: %w", a.Dir, err)
		}
		return e, nil
	case ArchiveURL:
		h, err := victorialogs.NewHTTP(victorialogs.HTTPConfig{URL: a.URL, SelectURL: a.SelectURL,
			Retention: a.Retention, FlushInterval: a.ServiceFlushInterval})
		if err != nil {
			return nil, err
		}
		return h, nil
	default:
		return nil, fmt.Errorf("no archive to open with --archive=%s", a.Mode)
	}
}
