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

package main

import (
	"crypto/elliptic"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestSignWithCosignKey: a key in cosign generate-key-pair's format (an
// ENCRYPTED SIGSTORE PRIVATE KEY, its password in COSIGN_PASSWORD) signs,
// the signature verifies with its public key, and a wrong password or a
// changed file fails.
func TestSignWithCosignKey(t *testing.T) {
	const password = "correct horse battery staple"
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte(password)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(priv), "ENCRYPTED SIGSTORE PRIVATE KEY") {
		t.Fatalf("generated key is not cosign's encrypted format:\n%s", priv)
	}
	dir := t.TempDir()
	keyFile, pubFile, file := filepath.Join(dir, "cosign.key"), filepath.Join(dir, "generated.pub"), filepath.Join(dir, "SHA256SUMS")
	for name, data := range map[string][]byte{keyFile: priv, pubFile: pub, file: []byte("0123  events-apiserver.yaml\n")} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	written := filepath.Join(dir, "cosign.pub")

	for _, tc := range []struct {
		name, password string
		wantErr        string
	}{
		{name: "wrong password", password: "wrong", wantErr: "reading the signing key"},
		{name: "COSIGN_PASSWORD", password: password},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(passwordEnv, tc.password)
			err := signCommand([]string{"--key", keyFile, "--public-key", written, file})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("sign: got %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{pubFile, written} {
				if err := verifyCommand([]string{"--key", key, file}); err != nil {
					t.Errorf("verify with %s: %v", filepath.Base(key), err)
				}
			}
		})
	}

	if err := os.WriteFile(file, []byte("0124  events-apiserver.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := verifyCommand([]string{"--key", pubFile, file}); err == nil {
		t.Error("verify accepts a file changed after signing")
	}
}
