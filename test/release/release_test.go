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

// Package release tests the record make release (hack/release.sh) adds to
// a release: the signatures hack/release-sign.sh writes, checked here
// with the standard library as cosign verify-blob checks them (ECDSA P-256
// over the file's SHA-256, ASN.1 DER, base64), and the SBOMs
// hack/release-sbom.sh writes of a small image built as hack/build-image.sh
// builds the server's.
package release

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-events/events-apiserver/test/harness"
)

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs name in dir with env added, failing the test with its output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// verifyBlob is cosign verify-blob's check of a key-signed blob.
func verifyBlob(pub *ecdsa.PublicKey, file, sigFile string) (bool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return false, err
	}
	encoded, err := os.ReadFile(sigFile)
	if err != nil {
		return false, err
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(encoded)))
	if err != nil {
		return false, err
	}
	digest := sha256.Sum256(data)
	return ecdsa.VerifyASN1(pub, digest[:], sig), nil
}

func TestReleaseSignatures(t *testing.T) {
	root := moduleRoot(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// What hack/release.sh signs, in small.
	artifacts := map[string]string{
		"events-apiserver-image-v0.0.0-test.tar": "an image archive",
		"events-apiserver.yaml":                  "apiVersion: v1\nkind: Namespace\n",
		"SHA256SUMS":                             "0123  events-apiserver.yaml\n",
	}
	names := make([]string, 0, len(artifacts))
	for name := range artifacts {
		names = append(names, name)
	}

	for _, tc := range []struct {
		name string
		key  *pem.Block
	}{
		{"PKCS#8 key", &pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}},
		{"SEC 1 key (openssl ecparam -genkey)", &pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			keyFile := filepath.Join(t.TempDir(), "signing.key")
			if err := os.WriteFile(keyFile, pem.EncodeToMemory(tc.key), 0o600); err != nil {
				t.Fatal(err)
			}
			for name, content := range artifacts {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run(t, root, []string{"SIGNING_KEY=" + keyFile}, filepath.Join(root, "hack", "release-sign.sh"), append([]string{dir}, names...)...)

			// cosign.pub is the key's public half, as PKIX PEM.
			pubPEM, err := os.ReadFile(filepath.Join(dir, "cosign.pub"))
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(pubPEM)
			if block == nil || block.Type != "PUBLIC KEY" {
				t.Fatalf("cosign.pub is not a PEM public key:\n%s", pubPEM)
			}
			parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			pub, ok := parsed.(*ecdsa.PublicKey)
			if !ok || !pub.Equal(&key.PublicKey) {
				t.Fatalf("cosign.pub holds %T, not the signing key's public half", parsed)
			}

			for _, name := range names {
				file := filepath.Join(dir, name)
				if ok, err := verifyBlob(&key.PublicKey, file, file+".sig"); err != nil || !ok {
					t.Errorf("%s: signature does not verify with the signing key (err %v)", name, err)
				}
				if ok, err := verifyBlob(&other.PublicKey, file, file+".sig"); err != nil || ok {
					t.Errorf("%s: signature verifies with another key (err %v)", name, err)
				}
			}

			// A file changed after signing fails, with the standard
			// library's check and with the release's own verify.
			tampered := filepath.Join(dir, "events-apiserver.yaml")
			if err := os.WriteFile(tampered, []byte(artifacts["events-apiserver.yaml"]+"---\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if ok, err := verifyBlob(&key.PublicKey, tampered, tampered+".sig"); err != nil || ok {
				t.Errorf("a tampered events-apiserver.yaml verifies (err %v)", err)
			}
			cmd := exec.Command(filepath.Join(root, ".cache", "tools", "bin", "releasetool"), "verify", "--key", "cosign.pub", "SHA256SUMS", "events-apiserver.yaml")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Errorf("releasetool verify accepts a tampered events-apiserver.yaml:\n%s", out)
			}
			if want := "SHA256SUMS: verified"; !strings.Contains(string(out), want) || !strings.Contains(string(out), "events-apiserver.yaml: invalid signature") {
				t.Errorf("releasetool verify says:\n%s\nwant %q and events-apiserver.yaml's invalid signature", out, want)
			}
		})
	}
}

// bom is what is read here of a CycloneDX document.
type bom struct {
	BOMFormat    string `json:"bomFormat"`
	SpecVersion  string `json:"specVersion"`
	SerialNumber string `json:"serialNumber"`
	Metadata     struct {
		Component component `json:"component"`
	} `json:"metadata"`
	Components   []component `json:"components"`
	Dependencies []struct {
		Ref       string   `json:"ref"`
		DependsOn []string `json:"dependsOn"`
	} `json:"dependencies"`
}

type component struct {
	BOMRef     string      `json:"bom-ref"`
	Type       string      `json:"type"`
	Name       string      `json:"name"`
	Version    string      `json:"version"`
	PURL       string      `json:"purl"`
	Hashes     []hash      `json:"hashes"`
	Components []component `json:"components"`
}

type hash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

func readBOM(t *testing.T, file string) (bom, []byte) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var b bom
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if b.BOMFormat != "CycloneDX" {
		t.Fatalf("%s: bomFormat %q, want CycloneDX", file, b.BOMFormat)
	}
	return b, data
}

// findByPURL finds the component whose package URL starts with prefix.
func findByPURL(components []component, prefix string) (component, bool) {
	for _, c := range components {
		if strings.HasPrefix(c.PURL, prefix) {
			return c, true
		}
	}
	return component{}, false
}

// TestReleaseSBOMs: an image built as the server's is (test/e2e/recorder,
// which links client-go, in place of the server), its SBOMs written as
// make release writes them: the binary's names the modules go.mod pins,
// the image's names the image by its digest, each file with its SHA-256,
// and the binary's modules in the entrypoint's file; a second run writes
// the same bytes.
func TestReleaseSBOMs(t *testing.T) {
	root := moduleRoot(t)
	dir := t.TempDir()
	binary := filepath.Join(dir, "recorder")
	build := exec.Command("go", "build", "-trimpath", "-o", binary, "./test/e2e/recorder")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building test/e2e/recorder: %v\n%s", err, out)
	}
	const repository, version = "registry.example/events-apiserver", "v0.0.0-sbom"
	archive := filepath.Join(dir, "image.tar")
	built := run(t, filepath.Join(root, "hack", "tools"), nil, "go", "run", "./imagebuild", "--binary", binary, "--output", archive,
		"--tag", repository+":"+version, "--version", version, "--created", "2026-01-02T03:04:05Z", "--ca-certificates", "", "--arch", runtime.GOARCH)
	fields := strings.Fields(strings.TrimSpace(built))
	ref := fields[len(fields)-1]
	digest := ref[strings.LastIndex(ref, "@")+1:]
	if !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("imagebuild printed %q; want <archive> <ref>@<digest>", built)
	}

	binSBOM, imageSBOM := filepath.Join(dir, "bin.cdx.json"), filepath.Join(dir, "image.cdx.json")
	sbom := filepath.Join(root, "hack", "release-sbom.sh")
	run(t, root, nil, sbom, archive, repository, version, binSBOM, imageSBOM)

	// The binary's: the module graph go.mod pins.
	bin, binData := readBOM(t, binSBOM)
	clientGo := run(t, root, nil, "go", "list", "-m", "-f", "{{.Version}}", "k8s.io/client-go")
	wantPURL := "pkg:golang/k8s.io/client-go@" + strings.TrimSpace(clientGo)
	mod, ok := findByPURL(bin.Components, wantPURL)
	if !ok {
		t.Fatalf("the binary's SBOM has no %s among its %d components", wantPURL, len(bin.Components))
	}
	if len(mod.Hashes) == 0 {
		t.Errorf("%s: no hash (go.sum's)", mod.PURL)
	}
	if !strings.HasPrefix(bin.Metadata.Component.PURL, "pkg:golang/github.com/kube-events/events-apiserver") {
		t.Errorf("the binary's SBOM describes %q, want the main module", bin.Metadata.Component.PURL)
	}

	// The image's: named by the digest, each file hashed, the binary's
	// modules inside the entrypoint's file.
	img, imgData := readBOM(t, imageSBOM)
	meta := img.Metadata.Component
	if meta.Type != "container" || !strings.Contains(meta.PURL, "@sha256%3A"+strings.TrimPrefix(digest, "sha256:")) || meta.Version != version {
		t.Errorf("the image's SBOM describes %+v; want the container %s@%s", meta, version, digest)
	}
	binaryData, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	binarySum := sha256.Sum256(binaryData)
	files := map[string]string{}
	var entrypoint component
	for _, c := range img.Components {
		if len(c.Hashes) != 1 || c.Hashes[0].Alg != "SHA-256" {
			t.Errorf("%s: hashes %+v, want its SHA-256", c.Name, c.Hashes)
			continue
		}
		if c.BOMRef == bin.Metadata.Component.BOMRef {
			entrypoint = c
			files["/usr/local/bin/events-apiserver"] = c.Hashes[0].Content
			continue
		}
		files[c.Name] = c.Hashes[0].Content
	}
	if diff := cmp.Diff(hex.EncodeToString(binarySum[:]), files["/usr/local/bin/events-apiserver"]); diff != "" {
		t.Errorf("the entrypoint's SHA-256 (-the binary built +the SBOM):\n%s", diff)
	}
	for _, want := range []string{"/etc/passwd", "/etc/group", "/etc/nsswitch.conf"} {
		if files[want] == "" {
			t.Errorf("the image's SBOM has no file %s; files: %v", want, files)
		}
	}
	if _, ok := findByPURL(entrypoint.Components, wantPURL); !ok {
		t.Errorf("the image's entrypoint holds no %s among its %d components", wantPURL, len(entrypoint.Components))
	}

	// Reproducible: the same image gives the same SBOMs.
	again := t.TempDir()
	run(t, root, nil, sbom, archive, repository, version, filepath.Join(again, "bin.cdx.json"), filepath.Join(again, "image.cdx.json"))
	for _, f := range []struct {
		name string
		data []byte
	}{{"bin.cdx.json", binData}, {"image.cdx.json", imgData}} {
		second, err := os.ReadFile(filepath.Join(again, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.data, second) {
			t.Errorf("%s differs from one run to the next:\n%s", f.name, cmp.Diff(string(f.data), string(second)))
		}
	}
}
