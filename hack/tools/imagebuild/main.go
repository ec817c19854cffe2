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

// Command imagebuild assembles the events-apiserver container image from a
// static binary, without a container engine: one layer (the binary, a
// passwd/group naming the non-root user, CA certificates if the build
// machine has them, and the data directory owned by that user) and a config
// that runs the binary as uid 65532. It writes one tar archive that is an
// OCI image layout (index.json, oci-layout, blobs/) and also carries a
// Docker manifest.json, so `docker load`, `podman load`, skopeo
// (oci-archive:) and crane push all read it.
//
// hack/build-image.sh runs it; the Dockerfile builds the same image with a
// container engine.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed layout; the Dockerfile uses the same.
const (
	binaryPath = "/usr/local/bin/events-apiserver"
	// dataDir is the working directory and declared volume: a server
	// started without --data-dir keeps its embedded etcd, certificates and
	// kubeconfig under it.
	dataDir   = "/var/lib/events-apiserver"
	uid       = 65532
	userName  = "nonroot"
	caCerts   = "/etc/ssl/certs/ca-certificates.crt"
	sourceURL = "https://github.com/kube-events/events-apiserver"
)

type options struct {
	binary, output, tag, caFile string
	// path is where the binary goes in the image, and the entrypoint;
	// title names the image in its labels. Other programs (the test
	// cluster's etcd and sandbox images) are packed the same way.
	path, title                string
	version, revision, created string
	platformOS, platformArch   string
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "static events-apiserver binary to put in the image (required)")
	flag.StringVar(&o.output, "output", "", "archive to write (required)")
	flag.StringVar(&o.tag, "tag", "events-apiserver:latest", "image reference recorded in the archive")
	flag.StringVar(&o.path, "path", binaryPath, "where the binary goes in the image; the entrypoint")
	flag.StringVar(&o.title, "title", "events-apiserver", "org.opencontainers.image.title")
	flag.StringVar(&o.caFile, "ca-certificates", caCerts, "CA bundle to copy to "+caCerts+"; empty or missing: none")
	flag.StringVar(&o.version, "version", "", "org.opencontainers.image.version")
	flag.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision (git commit)")
	flag.StringVar(&o.created, "created", "", "org.opencontainers.image.created and the image's creation time (RFC 3339)")
	flag.StringVar(&o.platformOS, "os", "linux", "image OS")
	flag.StringVar(&o.platformArch, "arch", "amd64", "image architecture")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.binary == "" || o.output == "" {
		return errors.New("--binary and --output are required")
	}
	if !path.IsAbs(o.path) || path.Clean(o.path) != o.path {
		return fmt.Errorf("--path %q: want a clean absolute path", o.path)
	}
	created := time.Unix(0, 0).UTC()
	if o.created != "" {
		t, err := time.Parse(time.RFC3339, o.created)
		if err != nil {
			return fmt.Errorf("--created: %w", err)
		}
		created = t.UTC()
	}
	if o.tag == "" || strings.ContainsAny(o.tag, " \t\n@") || !strings.Contains(path.Base(o.tag), ":") {
		return fmt.Errorf("--tag %q: want NAME:TAG", o.tag)
	}

	layerTar, err := rootfs(o, created)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = o.platformOS, o.platformArch
	cfg.Created = v1.Time{Time: created}
	cfg.Author = sourceURL
	cfg.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", uid, uid),
		Entrypoint:   []string{o.path},
		WorkingDir:   dataDir,
		Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		ExposedPorts: map[string]struct{}{"8443/tcp": {}},
		Volumes:      map[string]struct{}{dataDir: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       o.title,
			"org.opencontainers.image.description": "Kubernetes Events, made useful and safe: an aggregated API server for core/v1 and events.k8s.io Events",
			"org.opencontainers.image.source":      sourceURL,
			"org.opencontainers.image.url":         sourceURL,
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.version":     o.version,
			"org.opencontainers.image.revision":    o.revision,
			"org.opencontainers.image.created":     created.Format(time.RFC3339),
		},
	}
	cfg.History = []v1.History{{Created: v1.Time{Time: created}, CreatedBy: "hack/build-image.sh", Comment: o.title + " " + o.version}}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return writeArchive(o.output, img, o.tag)
}

// rootfs is the image's only layer, as an uncompressed tar with fixed
// times and owners, so the same binary gives the same digest.
func rootfs(o options, mtime time.Time) ([]byte, error) {
	binary, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(p string, owner, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: mode, Uid: int(owner), Gid: int(owner), ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(p string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	files := map[string][]byte{
		"/etc/passwd":        fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", userName, uid, uid, userName, userName),
		"/etc/group":         fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", userName, uid),
		o.path:               binary,
		"/etc/nsswitch.conf": []byte("hosts: files dns\n"),
	}
	if o.caFile != "" {
		switch data, err := os.ReadFile(o.caFile); {
		case err == nil:
			files[caCerts] = data
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	dirs := map[string]bool{}
	for p := range files {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range []string{"/tmp", "/root", "/home/" + userName, dataDir} {
		for ; d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sortedDirs := make([]string, 0, len(dirs))
	for d := range dirs {
		sortedDirs = append(sortedDirs, d)
	}
	sort.Strings(sortedDirs)
	for _, d := range sortedDirs {
		owner, mode := int64(0), int64(0o755)
		switch d {
		case dataDir, "/home/" + userName:
			owner, mode = uid, 0o700
		case "/tmp":
			mode = 0o1777
		case "/root":
			mode = 0o700
		}
		if err := dir(d, owner, mode); err != nil {
			return nil, err
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		mode := int64(0o644)
		if p == o.path {
			mode = 0o755
		}
		if err := file(p, mode, files[p]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeArchive writes img as an OCI image layout named ref, tars it, and
// adds a Docker manifest.json pointing at the same blobs.
func writeArchive(output string, img v1.Image, refName string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(output), ".imagebuild-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lp, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": refName,
		"io.containerd.image.name":          refName,
	})); err != nil {
		return err
	}

	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	dockerManifest := []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blobPath(cfgName), RepoTags: []string{refName}}}
	for _, l := range layers {
		digest, err := l.Digest()
		if err != nil {
			return err
		}
		dockerManifest[0].Layers = append(dockerManifest[0].Layers, blobPath(digest))
	}
	manifestJSON, err := json.Marshal(dockerManifest)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "manifest.json"), manifestJSON, 0o644); err != nil {
		return err
	}

	out, err := os.CreateTemp(filepath.Dir(output), ".imagebuild-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	if err := tarDir(out, tmp); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(out.Name(), output); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s@%s\n", output, refName, digest)
	return nil
}

func blobPath(h v1.Hash) string { return path.Join("blobs", h.Algorithm, h.Hex) }

// tarDir writes the files under dir to w, in name order, with fixed times.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, p := range names {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if info.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}
