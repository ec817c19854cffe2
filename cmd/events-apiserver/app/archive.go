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
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
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
	// TLS verifies the service of Mode url over https and sets the client
	// certificate; Auth authenticates to it. The client reads their files
	// again while it runs, so that rotated Secrets take effect.
	TLS  victorialogs.TLSConfig
	Auth victorialogs.AuthConfig
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
	const reread = " Read again at most once a second, so that a rotated Secret takes effect without a restart."
	fs.StringVar(&a.TLS.CAFile, "archive-ca-file", a.TLS.CAFile, "PEM file of the CAs that sign the certificate of the VictoriaLogs service of --archive=url, "+
		"which --archive-url (and --archive-select-url) then name with https; the system's roots when empty."+reread)
	fs.StringVar(&a.TLS.CertFile, "archive-cert-file", a.TLS.CertFile, "PEM client certificate presented to the VictoriaLogs service of --archive=url when it asks for one "+
		"(a proxy in front of it: open-source VictoriaLogs does not ask); needs --archive-key-file."+reread)
	fs.StringVar(&a.TLS.KeyFile, "archive-key-file", a.TLS.KeyFile, "PEM private key of --archive-cert-file."+reread)
	fs.StringVar(&a.TLS.ServerName, "archive-tls-server-name", a.TLS.ServerName, "Name the certificate of the VictoriaLogs service of --archive=url must hold, "+
		"when it is not the host of --archive-url.")
	fs.StringVar(&a.Auth.Username, "archive-username", a.Auth.Username, "User of HTTP basic authentication to the VictoriaLogs service of --archive=url "+
		"(its -httpAuth.username); needs --archive-password-file.")
	fs.StringVar(&a.Auth.PasswordFile, "archive-password-file", a.Auth.PasswordFile, "File holding the password of --archive-username (the service's -httpAuth.password); "+
		"trailing white space is not part of it."+reread)
	fs.StringVar(&a.Auth.BearerTokenFile, "archive-bearer-token-file", a.Auth.BearerTokenFile, "File holding a bearer token sent to the VictoriaLogs service of --archive=url, "+
		"for a proxy in front of it that checks one (VictoriaLogs itself checks basic authentication only); instead of --archive-username."+reread)
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
	errs = append(errs, a.refuseUserInfo()...)
	errs = append(errs, a.validateSecurity()...)
	if a.ServiceFlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("--archive-service-flush-interval must be positive, got %v", a.ServiceFlushInterval))
	}
	if a.Mode != ArchiveNone && a.Mode != "" && a.Retention < 24*time.Hour {
		errs = append(errs, fmt.Errorf("--archive-retention must be at least 24h, got %v", a.Retention))
	}
	return errs
}

// refuseUserInfo refuses archive URLs that hold credentials (user:pass@):
// a URL is printed with the flags and logged, a password file is not. The
// errors name the flag, never the value.
func (a *ArchiveOptions) refuseUserInfo() []error {
	var errs []error
	for _, u := range []struct{ flag, value string }{{"--archive-url", a.URL}, {"--archive-select-url", a.SelectURL}} {
		if parsed, err := url.Parse(u.value); err == nil && parsed.User != nil {
			errs = append(errs, fmt.Errorf("%s must not hold credentials (user:password@): "+
				"give them with --archive-username and --archive-password-file, or --archive-bearer-token-file", u.flag))
		}
	}
	return errs
}

// validateSecurity checks the TLS and authentication flags: for
// --archive=url only, TLS with https URLs, and settings that go together.
// The files are read when the archive opens.
func (a *ArchiveOptions) validateSecurity() []error {
	set := map[string]string{
		"--archive-ca-file": a.TLS.CAFile, "--archive-cert-file": a.TLS.CertFile, "--archive-key-file": a.TLS.KeyFile,
		"--archive-tls-server-name": a.TLS.ServerName, "--archive-username": a.Auth.Username,
		"--archive-password-file": a.Auth.PasswordFile, "--archive-bearer-token-file": a.Auth.BearerTokenFile,
	}
	var errs []error
	if a.Mode != ArchiveURL {
		for _, name := range slices.Sorted(maps.Keys(set)) {
			if set[name] != "" {
				errs = append(errs, fmt.Errorf("%s applies to --archive=url only", name))
			}
		}
		return errs
	}
	tlsSet := a.TLS != (victorialogs.TLSConfig{})
	if len(a.refuseUserInfo()) > 0 {
		// Already refused, and the values are not to be repeated.
		tlsSet = false
	}
	for _, u := range []struct{ flag, value string }{{"--archive-url", a.URL}, {"--archive-select-url", a.SelectURL}} {
		if tlsSet && u.value != "" && !strings.HasPrefix(u.value, "https://") {
			errs = append(errs, fmt.Errorf("%s must be an https URL with --archive-ca-file, --archive-cert-file or --archive-tls-server-name, got %q", u.flag, u.value))
		}
	}
	if (a.TLS.CertFile == "") != (a.TLS.KeyFile == "") {
		errs = append(errs, errors.New("--archive-cert-file and --archive-key-file go together"))
	}
	if (a.Auth.Username == "") != (a.Auth.PasswordFile == "") {
		errs = append(errs, errors.New("--archive-username and --archive-password-file go together"))
	}
	if a.Auth.PasswordFile != "" && a.Auth.BearerTokenFile != "" {
		errs = append(errs, errors.New("--archive-bearer-token-file replaces --archive-username and --archive-password-file: set one or the other"))
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
	klog.FromContext(ctx).Info("Archiving events", "archive", a.Mode, "dir", a.Dir, "url", a.URL, "retention", a.Retention,
		"caFile", a.TLS.CAFile, "username", a.Auth.Username, "bearerTokenFile", a.Auth.BearerTokenFile)
	switch a.Mode {
	case ArchiveEmbedded:
		e, err := victorialogs.OpenEmbedded(ctx, victorialogs.EmbeddedConfig{Dir: a.Dir, Retention: a.Retention})
		if err != nil {
			return nil, fmt.Errorf("opening the archive in %s: %w", a.Dir, err)
		}
		return e, nil
	case ArchiveURL:
		h, err := victorialogs.NewHTTP(victorialogs.HTTPConfig{URL: a.URL, SelectURL: a.SelectURL,
			Retention: a.Retention, FlushInterval: a.ServiceFlushInterval, TLS: a.TLS, Auth: a.Auth})
		if err != nil {
			return nil, fmt.Errorf("opening the archive at %s: %w", a.URL, err)
		}
		return h, nil
	default:
		return nil, fmt.Errorf("no archive to open with --archive=%s", a.Mode)
	}
}
