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
	"io"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("events-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// completed parses args, with a fresh --data-dir, as a server outside a
// cluster would, and completes the options.
func completed(t *testing.T, args ...string) CompletedOptions {
	t.Helper()
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	o, err := parse(t, append([]string{"--data-dir=" + t.TempDir()}, args...)...).Complete()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// checkError fails t unless err is nil when want is "", or an error
// containing want.
func checkError(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

func TestCompleteChoosesModes(t *testing.T) {
	tests := []struct {
		name           string
		args           []string
		inCluster      bool
		wantStandalone bool
		wantEmbedded   bool
		wantBind       string
	}{
		{name: "no flags: standalone on loopback with embedded etcd", wantStandalone: true, wantEmbedded: true, wantBind: "127.0.0.1"},
		{name: "etcd servers given", args: []string{"--etcd-servers=http://127.0.0.1:2379"}, wantStandalone: true, wantBind: "127.0.0.1"},
		{name: "authentication kubeconfig: delegated", args: []string{"--authentication-kubeconfig=/k"}, wantEmbedded: true, wantBind: "0.0.0.0"},
		{name: "authorization kubeconfig: delegated", args: []string{"--authorization-kubeconfig=/k"}, wantEmbedded: true, wantBind: "0.0.0.0"},
		{name: "core kubeconfig: delegated", args: []string{"--kubeconfig=/k"}, wantEmbedded: true, wantBind: "0.0.0.0"},
		{name: "in cluster: delegated", inCluster: true, wantEmbedded: true, wantBind: "0.0.0.0"},
		{name: "--standalone wins over a kubeconfig", args: []string{"--standalone", "--authentication-kubeconfig=/k"}, wantStandalone: true, wantEmbedded: true, wantBind: "127.0.0.1"},
		{name: "--standalone=false wins over no kubeconfig", args: []string{"--standalone=false"}, wantEmbedded: true, wantBind: "0.0.0.0"},
		{name: "explicit bind address kept when standalone", args: []string{"--bind-address=0.0.0.0"}, wantStandalone: true, wantEmbedded: true, wantBind: "0.0.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.inCluster {
				t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
			} else {
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
			}
			o, err := parse(t, append([]string{"--data-dir=" + t.TempDir()}, tt.args...)...).Complete()
			if err != nil {
				t.Fatal(err)
			}
			if o.StandaloneMode() != tt.wantStandalone || o.EmbeddedEtcd() != tt.wantEmbedded {
				t.Errorf("standalone=%v embedded=%v, want %v %v", o.StandaloneMode(), o.EmbeddedEtcd(), tt.wantStandalone, tt.wantEmbedded)
			}
			if got := o.Recommended.SecureServing.BindAddress.String(); got != tt.wantBind {
				t.Errorf("bind address %s, want %s", got, tt.wantBind)
			}
			if o.StandaloneMode() && o.Recommended.Etcd.EnableGarbageCollection {
				t.Error("standalone server enables garbage collection without a garbage collector")
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	o := NewOptions()
	if o.EventTTL != time.Hour {
		t.Errorf("event TTL %v, want 1h", o.EventTTL)
	}
	if o.Recommended.SecureServing.BindPort != DefaultSecurePort {
		t.Errorf("secure port %d, want %d", o.Recommended.SecureServing.BindPort, DefaultSecurePort)
	}
	if o.Recommended.Etcd.DefaultStorageMediaType != "application/vnd.kubernetes.protobuf" {
		t.Errorf("storage media type %q, want protobuf", o.Recommended.Etcd.DefaultStorageMediaType)
	}
	if o.Recommended.Etcd.StorageConfig.Prefix != "/registry" {
		t.Errorf("etcd prefix %q, want /registry", o.Recommended.Etcd.StorageConfig.Prefix)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "embedded etcd needs no etcd servers"},
		{name: "TTL under a second", args: []string{"--event-ttl=500ms"}, wantErr: "--event-ttl must be at least 1s"},
		{name: "no data dir for the embedded etcd", args: []string{"--data-dir="}, wantErr: "--data-dir is required"},
		{name: "no secure port", args: []string{"--secure-port=0"}, wantErr: "--secure-port must be set"},
		{name: "bad storage media type", args: []string{"--storage-media-type=text/plain"}, wantErr: "storage-media-type"},
		{name: "chains off", args: []string{"--ancestry-timeout=0"}},
		{name: "negative chain budget", args: []string{"--ancestry-timeout=-1s"}, wantErr: "--ancestry-timeout must not be negative"},
		{name: "no chain cache", args: []string{"--ancestry-cache-size=0"}, wantErr: "--ancestry-cache-size must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkError(t, completed(t, tt.args...).Validate(), tt.wantErr)
		})
	}
}

// TestValidateArchiveSecurity: the archive's TLS and authentication flags
// are checked together, with the flags named; unset, plain http stays.
func TestValidateArchiveSecurity(t *testing.T) {
	url := []string{"--archive=url", "--archive-url=https://events-victorialogs:9428"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "plain http without TLS or credentials", args: []string{"--archive=url", "--archive-url=http://events-victorialogs:9428"}},
		{name: "https with a CA and basic authentication", args: append(url, "--archive-ca-file=/tls/ca.crt", "--archive-username=events-apiserver", "--archive-password-file=/auth/password")},
		{name: "https with a client certificate and a bearer token", args: append(url, "--archive-cert-file=/tls/tls.crt", "--archive-key-file=/tls/tls.key", "--archive-bearer-token-file=/auth/token")},
		{name: "basic authentication over http", args: []string{"--archive=url", "--archive-url=http://events-victorialogs:9428", "--archive-username=u", "--archive-password-file=/p"}},
		{
			name:    "a CA with an http URL",
			args:    []string{"--archive=url", "--archive-url=http://events-victorialogs:9428", "--archive-ca-file=/tls/ca.crt"},
			wantErr: `--archive-url must be an https URL with --archive-ca-file, --archive-cert-file or --archive-tls-server-name, got "http://events-victorialogs:9428"`,
		},
		{
			name:    "a server name with an http select URL",
			args:    append(url, "--archive-select-url=http://vlselect:9428", "--archive-tls-server-name=events-victorialogs"),
			wantErr: `--archive-select-url must be an https URL`,
		},
		{name: "a certificate without its key", args: append(url, "--archive-cert-file=/tls/tls.crt"), wantErr: "--archive-cert-file and --archive-key-file go together"},
		{name: "a username without a password", args: append(url, "--archive-username=u"), wantErr: "--archive-username and --archive-password-file go together"},
		{name: "a password without a username", args: append(url, "--archive-password-file=/p"), wantErr: "--archive-username and --archive-password-file go together"},
		{
			name:    "basic authentication and a bearer token",
			args:    append(url, "--archive-username=u", "--archive-password-file=/p", "--archive-bearer-token-file=/t"),
			wantErr: "--archive-bearer-token-file replaces --archive-username and --archive-password-file",
		},
		{
			name:    "credentials in the URL",
			args:    []string{"--archive=url", "--archive-url=https://events:s3cret@events-victorialogs:9428", "--archive-ca-file=/tls/ca.crt"},
			wantErr: "--archive-url must not hold credentials (user:password@)",
		},
		{
			name:    "a user in the select URL",
			args:    append(url, "--archive-select-url=http://events@vlselect:9428"),
			wantErr: "--archive-select-url must not hold credentials (user:password@)",
		},
		{name: "TLS for the embedded archive", args: []string{"--archive=embedded", "--archive-ca-file=/tls/ca.crt"}, wantErr: "--archive-ca-file applies to --archive=url only"},
		{name: "credentials without an archive", args: []string{"--archive=none", "--archive-password-file=/p"}, wantErr: "--archive-password-file applies to --archive=url only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkError(t, completed(t, tt.args...).Validate(), tt.wantErr)
		})
	}
}

// TestArchiveURLCredentialsAreRefusedUnlogged runs the command with a
// password in --archive-url at -v=1, where the flags are printed: it
// refuses to start, and neither its error nor its log holds the password.
func TestArchiveURLCredentialsAreRefusedUnlogged(t *testing.T) {
	const password = "s3cret-in-the-url"
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = stderr
	t.Cleanup(func() {
		os.Stderr = saved
		_ = new(klog.Level).Set("0") // -v=1 is the process's
	})

	cmd := NewCommand(t.Context(), &MemoryLimit{})
	cmd.SetArgs([]string{"--data-dir=" + t.TempDir(), "--archive=url", "--archive-url=http://events:" + password + "@events-victorialogs:9428", "-v=1"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err = cmd.Execute()
	os.Stderr = saved
	if err == nil || !strings.Contains(err.Error(), "--archive-url must not hold credentials") {
		t.Fatalf("events-apiserver: %v, want the refusal of credentials in --archive-url", err)
	}
	logged, readErr := os.ReadFile(stderr.Name())
	if readErr != nil {
		t.Fatal(readErr)
	}
	if strings.Contains(err.Error()+string(logged), password) {
		t.Errorf("the password was printed:\nerror: %v\nlog: %s", err, logged)
	}
}

func TestConfigWithoutEtcdAsksForRun(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	o, err := parse(t, "--data-dir="+t.TempDir()).Complete()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Config(); err == nil || !strings.Contains(err.Error(), "embedded etcd") {
		t.Fatalf("Config without etcd: %v, want an error pointing at Run", err)
	}
}

// TestCostlyLibraryFeaturesOffUnlessAsked: the watch cache keeps no
// snapshot per write and no size per key by default; --feature-gates turns
// either back on.
func TestCostlyLibraryFeaturesOffUnlessAsked(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, gate := range []featuregate.Feature{features.ListFromCacheSnapshot, features.SizeBasedListCostEstimate} {
		for _, tt := range []struct {
			args []string
			want bool
		}{
			{nil, false},
			{[]string{"--feature-gates=" + string(gate) + "=true"}, true},
			{[]string{"--feature-gates=" + string(gate) + "=false"}, false},
		} {
			t.Run(string(gate)+" "+strings.Join(tt.args, " "), func(t *testing.T) {
				completed(t, tt.args...)
				if got := utilfeature.DefaultFeatureGate.Enabled(gate); got != tt.want {
					t.Errorf("%s = %v, want %v", gate, got, tt.want)
				}
			})
		}
	}
}

// TestGCPercentDefaultsUnlessGOGCIsSet: the server's collector target is
// DefaultGCPercent, or GOGC's when the environment sets it (the runtime
// read GOGC at start; the test sets the runtime as the environment would
// have).
func TestGCPercentDefaultsUnlessGOGCIsSet(t *testing.T) {
	previous := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(previous) })

	SetDefaultGCPercent()
	if got := debug.SetGCPercent(200); got != DefaultGCPercent {
		t.Errorf("without GOGC: the runtime's target is %d, want %d", got, DefaultGCPercent)
	}
	t.Setenv("GOGC", "200")
	SetDefaultGCPercent()
	if got := debug.SetGCPercent(200); got != 200 {
		t.Errorf("with GOGC=200: the runtime's target is %d, want 200", got)
	}
}
