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

// Package image tests the container image that `make image` builds, the way
// a container runtime would run it under the Deployment's securityContext:
// unpacked from its archive, its entrypoint started with the config's user,
// environment and working directory, on a read-only root filesystem where
// only the image's declared volumes and /tmp (an emptyDir in
// artifacts/base/deployment.yaml) are writable.
//
// Running it needs root (to mount and chroot, as a container runtime does);
// CI and the development machines run as root.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/test/freeport"
	"github.com/kube-events/events-apiserver/test/harness"
)

// The image's contract with the manifests.
const (
	wantUID    = 65532
	dataVolume = "/var/lib/events-apiserver"
)

// The OCI image layout, only what is read here.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
}

type index struct {
	Manifests []descriptor `json:"manifests"`
}

type manifest struct {
	Config descriptor   `json:"config"`
	Layers []descriptor `json:"layers"`
}

type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string              `json:"User"`
		Entrypoint []string            `json:"Entrypoint"`
		Cmd        []string            `json:"Cmd"`
		Env        []string            `json:"Env"`
		WorkingDir string              `json:"WorkingDir"`
		Volumes    map[string]struct{} `json:"Volumes"`
		Labels     map[string]string   `json:"Labels"`
	} `json:"config"`
}

// image is an archive read into memory: its config and its layers' blobs.
type image struct {
	ref    string
	config imageConfig
	layers [][]byte // each as stored (gzip or plain tar)
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(runSpecEnv); spec != "" {
		// The child started by start: become the container's process.
		fmt.Fprintln(os.Stderr, "image test: entering the container:", enterContainer(spec))
		os.Exit(127)
	}
	os.Exit(m.Run())
}

func TestImageRunsNonRootOnReadOnlyRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts and chroots like a container runtime: run it as root")
	}
	archive, want := buildImage(t)
	img := readArchive(t, archive)

	labels := img.config.Config.Labels
	for key, value := range map[string]string{
		"org.opencontainers.image.title":    "events-apiserver",
		"org.opencontainers.image.version":  want["VERSION"],
		"org.opencontainers.image.revision": want["COMMIT"],
		"org.opencontainers.image.created":  want["DATE"],
	} {
		if labels[key] != value {
			t.Errorf("label %s = %q, want %q", key, labels[key], value)
		}
	}
	if img.config.OS != "linux" || img.config.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", img.config.OS, img.config.Architecture, runtime.GOARCH)
	}
	uid, gid := user(t, img.config.Config.User)
	if uid != wantUID || gid != wantUID {
		t.Fatalf("image user %q, want %d:%d (runAsUser/runAsGroup of the Deployment)", img.config.Config.User, wantUID, wantUID)
	}
	if _, ok := img.config.Config.Volumes[dataVolume]; !ok {
		t.Errorf("volumes %v, want %s", img.config.Config.Volumes, dataVolume)
	}

	rootfs := unpack(t, img)

	t.Run("--version", func(t *testing.T) {
		out, err := start(t, rootfs, img, nil, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("--version: %v\n%s", err, out)
		}
		if got, wantOut := strings.TrimSpace(string(out)), "events-apiserver "+want["VERSION"]; got != wantOut {
			t.Errorf("--version printed %q, want %q", got, wantOut)
		}
	})

	t.Run("embedded default serves", func(t *testing.T) {
		volumes := map[string]string{}
		for _, v := range append(mapKeys(img.config.Config.Volumes), "/tmp") {
			dir := t.TempDir()
			if err := os.Chown(dir, uid, gid); err != nil {
				t.Fatal(err)
			}
			volumes[v] = dir
		}
		port := freeport.Port(t)
		var log bytes.Buffer
		cmd := start(t, rootfs, img, volumes, "--secure-port="+strconv.Itoa(port), "--embedded-etcd-log-level=error")
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					t.Logf("server exited: %v", err)
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				if err := <-exited; err != nil {
					t.Logf("server killed: %v", err)
				}
			}
			if t.Failed() {
				t.Logf("server log:\n%s", log.String())
			}
		})

		// The default data dir is relative to the working directory, the
		// data volume; the kubeconfig appears there once the server is ready.
		dataDir := filepath.Join(volumes[dataVolume], "events-apiserver-data")
		kubeconfig := filepath.Join(dataDir, "kubeconfig")
		ctx := t.Context()
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
			select {
			case err := <-exited:
				return false, fmt.Errorf("server exited: %v", err)
			default:
			}
			_, err := os.Stat(kubeconfig)
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v", kubeconfig, err)
		}

		client := httpsClient(t, filepath.Join(dataDir, "pki", "ca.crt"))
		base := "https://127.0.0.1:" + strconv.Itoa(port)
		if code, body := get(t, client, base+"/readyz"); code != http.StatusOK || body != "ok" {
			t.Errorf("/readyz: %d %q, want 200 ok", code, body)
		}
		// The admin kubeconfig works: events are written to the etcd in
		// the data volume and read back.
		config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		clientset := kubernetes.NewForConfigOrDie(config)
		// /version, as the admin reads it (standalone authenticates every
		// request but the health checks).
		info, err := clientset.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("/version: %v", err)
		}
		if info.GitVersion != want["VERSION"] || info.GitCommit != want["COMMIT"] {
			t.Errorf("/version = %+v, want %s %s", info, want["VERSION"], want["COMMIT"])
		}
		events := clientset.CoreV1().Events("default")
		if _, err := events.Create(ctx, eventFixture(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating an event: %v", err)
		}
		list, err := events.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("listing events: %v, %d items", err, len(list.Items))
		}
	})
}

// releaseVersion stamps the image as a release is stamped: a binary whose
// version is not a v0.0.0 pre-release (what a tree without tags gets) must
// start too.
const releaseVersion = "v0.1.0"

// buildImage runs `make image`'s script into a temporary archive and
// returns it with the version it must carry (hack/ldflags.sh --env).
func buildImage(t *testing.T) (string, map[string]string) {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ldflags := exec.Command(filepath.Join(root, "hack", "ldflags.sh"), "--env")
	ldflags.Env = append(os.Environ(), "VERSION="+releaseVersion)
	env, err := ldflags.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(env)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		want[k] = v
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	build := exec.Command(filepath.Join(root, "hack", "build-image.sh"), archive)
	build.Env = append(os.Environ(), "IMAGE=events-apiserver:image-test", "VERSION="+releaseVersion)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/build-image.sh: %v\n%s", err, out)
	}
	return archive, want
}

// readArchive reads the OCI layout in the archive: index, manifest,
// config and layer blobs.
func readArchive(t *testing.T, archive string) image {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[path.Clean(hdr.Name)] = data
		}
	}
	if _, ok := files["oci-layout"]; !ok {
		t.Fatal("archive has no oci-layout: not an OCI image layout")
	}
	if _, ok := files["manifest.json"]; !ok {
		t.Error("archive has no manifest.json: docker load cannot read it")
	}
	blob := func(digest string) []byte {
		t.Helper()
		algorithm, hex, _ := strings.Cut(digest, ":")
		data, ok := files[path.Join("blobs", algorithm, hex)]
		if !ok {
			t.Fatalf("blob %s missing", digest)
		}
		return data
	}
	var idx index
	decode(t, files["index.json"], &idx)
	if len(idx.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(idx.Manifests))
	}
	var m manifest
	decode(t, blob(idx.Manifests[0].Digest), &m)
	img := image{ref: idx.Manifests[0].Annotations["org.opencontainers.image.ref.name"]}
	decode(t, blob(m.Config.Digest), &img.config)
	for _, l := range m.Layers {
		img.layers = append(img.layers, blob(l.Digest))
	}
	if img.ref != "events-apiserver:image-test" {
		t.Errorf("ref.name %q, want events-apiserver:image-test", img.ref)
	}
	return img
}

func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// unpack extracts the layers, in order, into a new directory with the
// owners and modes they record.
func unpack(t *testing.T, img image) string {
	t.Helper()
	rootfs := t.TempDir()
	if err := os.Chmod(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, layer := range img.layers {
		var r io.Reader = bytes.NewReader(layer)
		if bytes.HasPrefix(layer, []byte{0x1f, 0x8b}) {
			gz, err := gzip.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			r = gz
		}
		tr := tar.NewReader(r)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := path.Clean("/" + hdr.Name)
			if strings.HasPrefix(path.Base(name), ".wh.") {
				t.Fatalf("layer has a whiteout %s: a single-layer image needs none", name)
			}
			target := filepath.Join(rootfs, name)
			mode := os.FileMode(hdr.Mode).Perm()
			if hdr.Mode&0o1000 != 0 {
				mode |= os.ModeSticky
			}
			switch hdr.Typeflag {
			case tar.TypeDir:
				if err := os.MkdirAll(target, 0o755); err != nil {
					t.Fatal(err)
				}
			case tar.TypeReg:
				data, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(target, data, 0o600); err != nil {
					t.Fatal(err)
				}
			case tar.TypeSymlink:
				if err := os.Symlink(hdr.Linkname, target); err != nil {
					t.Fatal(err)
				}
				continue
			default:
				t.Fatalf("unexpected entry %s of type %c", name, hdr.Typeflag)
			}
			if err := os.Chown(target, hdr.Uid, hdr.Gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(target, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	return rootfs
}

func user(t *testing.T, spec string) (int, int) {
	t.Helper()
	u, g, ok := strings.Cut(spec, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("image user %q: want numeric UID:GID, so that runAsNonRoot can check it", spec)
	}
	return uid, gid
}

func mapKeys(m map[string]struct{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// runSpecEnv carries a runSpec to the test binary re-executed in its own
// mount namespace.
const runSpecEnv = "EVENTS_APISERVER_IMAGE_TEST_RUN"

// runSpec is what a container runtime takes from the image config and the
// pod spec.
type runSpec struct {
	Rootfs     string
	Volumes    map[string]string // container path -> host directory
	UID, GID   int
	WorkingDir string
	Env        []string
	Args       []string
}

// start returns the command that runs the image's entrypoint with extra
// args in a mount namespace of its own, like a container.
func start(t *testing.T, rootfs string, img image, volumes map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	uid, gid := user(t, img.config.Config.User)
	spec, err := json.Marshal(runSpec{
		Rootfs:     rootfs,
		Volumes:    volumes,
		UID:        uid,
		GID:        gid,
		WorkingDir: img.config.Config.WorkingDir,
		Env:        img.config.Config.Env,
		Args:       append(append(append([]string{}, img.config.Config.Entrypoint...), img.config.Config.Cmd...), args...),
	})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = []string{runSpecEnv + "=" + string(spec)}
	// A new mount namespace, with / made private, so the mounts below
	// stay in it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// enterContainer runs in the re-executed test binary: it mounts the rootfs
// read-only with the volumes writable, changes root, drops to the image's
// user and executes the entrypoint. It returns only on failure.
func enterContainer(specJSON string) error {
	var spec runSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	if err := syscall.Mount(spec.Rootfs, spec.Rootfs, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mounting the rootfs: %w", err)
	}
	for target, source := range spec.Volumes {
		if err := syscall.Mount(source, filepath.Join(spec.Rootfs, target), "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("mounting volume %s: %w", target, err)
		}
	}
	if err := syscall.Mount("", spec.Rootfs, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("making the rootfs read-only: %w", err)
	}
	if err := syscall.Chroot(spec.Rootfs); err != nil {
		return err
	}
	workingDir := spec.WorkingDir
	if workingDir == "" {
		workingDir = "/"
	}
	if err := syscall.Chdir(workingDir); err != nil {
		return err
	}
	if err := syscall.Setgroups(nil); err != nil {
		return err
	}
	if err := syscall.Setgid(spec.GID); err != nil {
		return err
	}
	if err := syscall.Setuid(spec.UID); err != nil {
		return err
	}
	return syscall.Exec(spec.Args[0], spec.Args, spec.Env)
}

func httpsClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", caFile)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Timeout: 10 * time.Second, Transport: transport}
}

func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func eventFixture() *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "image-test.1", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "image-test"},
		Reason:         "Started",
		Message:        "the image runs",
		Source:         corev1.EventSource{Component: "image-test"},
		Type:           corev1.EventTypeNormal,
		Count:          1,
	}
}
