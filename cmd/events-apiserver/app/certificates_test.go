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
	"crypto/x509"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateCertificates(t *testing.T) {
	delegated := []string{"--standalone=false", "--etcd-servers=https://events-etcd:2379"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "all self-managed", args: append(delegated, "--self-managed-certificates", "--self-managed-etcd-certificates=bundled",
			"--self-managed-archive-certificates", "--archive=url", "--archive-url=https://events-victorialogs:9428",
			"--archive-ca-file=/tmp/archive/ca.crt", "--archive-username=events-apiserver", "--archive-password-file=/tmp/archive/password")},
		{name: "offload", args: append(delegated, "--self-managed-certificates", "--self-managed-etcd-certificates=offload")},
		{name: "the last value wins", args: append(delegated, "--self-managed-etcd-certificates=bundled", "--self-managed-etcd-certificates=")},
		{name: "an unknown etcd mode", args: append(delegated, "--self-managed-etcd-certificates=all"),
			wantErr: `--self-managed-etcd-certificates must be "bundled", "offload" or empty, got "all"`},
		{name: "standalone", args: []string{"--standalone", "--self-managed-certificates"},
			wantErr: "need a kube-apiserver to keep the Secrets in; not standalone"},
		{name: "with a serving certificate file", args: append(delegated, "--self-managed-certificates", "--tls-cert-file=/tls.crt", "--tls-private-key-file=/tls.key"),
			wantErr: "--self-managed-certificates cannot be combined with --tls-cert-file"},
		{name: "with etcd certificate files", args: append(delegated, "--self-managed-etcd-certificates=bundled", "--etcd-cafile=/ca.crt"),
			wantErr: "--self-managed-etcd-certificates cannot be combined with --etcd-certfile, --etcd-keyfile or --etcd-cafile"},
		{name: "with the embedded etcd", args: []string{"--standalone=false", "--self-managed-etcd-certificates=bundled"},
			wantErr: "is for the bundled etcd, not the embedded one"},
		{name: "the archive's files unnamed", args: append(delegated, "--self-managed-archive-certificates"),
			wantErr: "--self-managed-archive-certificates writes the files --archive-ca-file and --archive-password-file name"},
		{name: "a lifetime under a minute", args: append(delegated, "--self-managed-certificates", "--self-managed-certificates-lifetime=30s"),
			wantErr: "--self-managed-certificates-lifetime must be at least 1m"},
		{name: "a CA that outlives its certificates by less than three times", args: append(delegated, "--self-managed-certificates",
			"--self-managed-certificates-lifetime=24h", "--self-managed-certificates-ca-lifetime=48h"),
			wantErr: "--self-managed-certificates-ca-lifetime must be at least three times --self-managed-certificates-lifetime (72h0m0s), got 48h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkError(t, completed(t, tt.args...).Validate(), tt.wantErr)
		})
	}
}

// TestCertificateUsages: a certificate carries client auth only if it is a
// client certificate (the server's) or a peer's, which etcd dials with;
// offload leaves the members' certificate for clients to the cluster's CA.
func TestCertificateUsages(t *testing.T) {
	for _, mode := range []string{etcdCertificatesBundled, etcdCertificatesOffload} {
		t.Run(mode, func(t *testing.T) {
			c := CertificateOptions{Serving: true, Etcd: mode, Archive: true, Namespace: "ns", Service: "events-apiserver"}
			got := map[string][]x509.ExtKeyUsage{}
			for _, a := range c.authorities() {
				for _, cert := range a.Certificates {
					got[cert.Secret] = cert.Usages
				}
			}
			server, client := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
			want := map[string][]x509.ExtKeyUsage{
				servingSecret:    server,
				archiveTLSSecret: server,
				etcdMemberSecret: server,
				etcdPeerSecret:   {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
				etcdClientSecret: client,
			}
			if mode == etcdCertificatesOffload {
				delete(want, etcdMemberSecret)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("certificates and their extended key usages (-want +got):\n%s", diff)
			}
		})
	}
}
