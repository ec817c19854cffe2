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
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

type imageSBOMOptions struct {
	image, binarySBOM, repository, version, output string
}

func imageSBOMCommand(args []string) error {
	var o imageSBOMOptions
	fs := flag.NewFlagSet("image-sbom", flag.ContinueOnError)
	fs.StringVar(&o.image, "image", "", "image archive hack/build-image.sh wrote (OCI layout in a tar)")
	fs.StringVar(&o.binarySBOM, "binary-sbom", "", "CycloneDX JSON SBOM of the image's entrypoint (cyclonedx-gomod bin)")
	fs.StringVar(&o.repository, "repository", "", "the image's repository, as the release names it")
	fs.StringVar(&o.version, "version", "", "the release's version (the image's tag)")
	fs.StringVar(&o.output, "output", "", "SBOM to write (CycloneDX JSON)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.image == "" || o.binarySBOM == "" || o.repository == "" || o.version == "" || o.output == "" {
		return errors.New("image-sbom: --image, --binary-sbom, --repository, --version and --output are required")
	}
	binBOM, err := readBOM(o.binarySBOM)
	if err != nil {
		return err
	}
	img, err := imageOfArchive(o.image)
	if err != nil {
		return err
	}
	bom, err := imageSBOM(img, binBOM, o.repository, o.version)
	if err != nil {
		return err
	}
	out, err := os.Create(o.output)
	if err != nil {
		return err
	}
	if err := cdx.NewBOMEncoder(out, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func readBOM(file string) (*cdx.BOM, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return nil, fmt.Errorf("reading the SBOM %s: %w", file, err)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil {
		return nil, fmt.Errorf("the SBOM %s names no component in its metadata", file)
	}
	return &bom, nil
}

// imageOfArchive unpacks archive, an OCI layout in a tar, and returns the
// one image its index names.
func imageOfArchive(archive string) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "releasetool-image-")
	if err != nil {
		return nil, err
	}
	// The image's blobs are read lazily: the directory stays until exit.
	if err := untar(archive, dir); err != nil {
		return nil, err
	}
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not an OCI image layout: %w", archive, err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(manifest.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d images; want one", archive, len(manifest.Manifests))
	}
	return index.Image(manifest.Manifests[0].Digest)
}

func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+h.Name)))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			err = writeFile(name, tr)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(name string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// imageFile is a regular file in the image's layers.
type imageFile struct {
	path, sha256 string
}

// imageSBOM describes img: the image named by its digest, every file of
// its layers with its SHA-256, and the entrypoint's module graph (binBOM)
// nested in the entrypoint's file.
func imageSBOM(img v1.Image, binBOM *cdx.BOM, repository, version string) (*cdx.BOM, error) {
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(cfg.Config.Entrypoint) == 0 {
		return nil, errors.New("the image has no entrypoint")
	}
	entrypoint := cfg.Config.Entrypoint[0]
	files, err := filesOf(img)
	if err != nil {
		return nil, err
	}

	imageRef := imagePURL(repository, version, digest, cfg.Architecture)
	components := make([]cdx.Component, 0, len(files))
	deps := make([]string, 0, len(files))
	foundEntrypoint := false
	for _, f := range files {
		hashes := &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: f.sha256}}
		if f.path == entrypoint {
			// The binary's own SBOM, its modules nested: its
			// dependency graph keeps its references.
			bin := *binBOM.Metadata.Component
			bin.Hashes = hashes
			bin.Components = binBOM.Components
			bin.Properties = appendProperty(bin.Properties, "events-apiserver:image:path", f.path)
			components = append(components, bin)
			deps = append(deps, bin.BOMRef)
			foundEntrypoint = true
			continue
		}
		ref := "file:" + f.path
		components = append(components, cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeFile, Name: f.path, Hashes: hashes})
		deps = append(deps, ref)
	}
	if !foundEntrypoint {
		return nil, fmt.Errorf("the image's entrypoint %s is not a file of its layers", entrypoint)
	}

	bom := cdx.NewBOM()
	bom.SerialNumber = serialNumber(digest)
	tools := []cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "releasetool", Description: "hack/tools/releasetool image-sbom"}}
	if binBOM.Metadata.Tools != nil && binBOM.Metadata.Tools.Components != nil {
		tools = append(tools, *binBOM.Metadata.Tools.Components...)
	}
	bom.Metadata = &cdx.Metadata{
		// The image's creation time: the same image gives the same SBOM.
		Timestamp: cfg.Created.UTC().Format(time.RFC3339),
		Tools:     &cdx.ToolsChoice{Components: &tools},
		Component: &cdx.Component{
			BOMRef:     imageRef,
			Type:       cdx.ComponentTypeContainer,
			Name:       repository,
			Version:    version,
			PackageURL: imageRef,
			Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: digest.Hex}},
			Properties: &[]cdx.Property{{Name: "events-apiserver:image:digest", Value: digest.String()}},
		},
	}
	bom.Components = &components
	dependencies := []cdx.Dependency{{Ref: imageRef, Dependencies: &deps}}
	if binBOM.Dependencies != nil {
		dependencies = append(dependencies, *binBOM.Dependencies...)
	}
	bom.Dependencies = &dependencies
	return bom, nil
}

// filesOf lists the regular files of img's layers, the last layer's copy
// of a path winning, in path order.
func filesOf(img v1.Image) ([]imageFile, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	byPath := map[string]string{}
	for _, layer := range layers {
		rc, err := layer.Uncompressed()
		if err != nil {
			return nil, err
		}
		err = func() error {
			defer rc.Close()
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				p := path.Clean("/" + h.Name)
				if base := path.Base(p); strings.HasPrefix(base, ".wh.") {
					delete(byPath, path.Join(path.Dir(p), strings.TrimPrefix(base, ".wh.")))
					continue
				}
				if h.Typeflag != tar.TypeReg {
					continue
				}
				sum := sha256.New()
				if _, err := io.Copy(sum, tr); err != nil {
					return err
				}
				byPath[p] = hex.EncodeToString(sum.Sum(nil))
			}
		}()
		if err != nil {
			return nil, err
		}
	}
	files := make([]imageFile, 0, len(byPath))
	for p, sum := range byPath {
		files = append(files, imageFile{path: p, sha256: sum})
	}
	slices.SortFunc(files, func(a, b imageFile) int { return strings.Compare(a.path, b.path) })
	return files, nil
}

// imagePURL is the image's package URL (purl's oci type): its last path
// segment as the name, the digest as the version, the repository, tag and
// architecture as qualifiers.
func imagePURL(repository, tag string, digest v1.Hash, arch string) string {
	q := url.Values{}
	q.Set("repository_url", repository)
	q.Set("tag", tag)
	if arch != "" {
		q.Set("arch", arch)
	}
	// The version's colon percent-encoded, as purl's oci examples have it.
	version := strings.ReplaceAll(url.PathEscape(digest.String()), ":", "%3A")
	return fmt.Sprintf("pkg:oci/%s@%s?%s", strings.ToLower(path.Base(repository)), version, q.Encode())
}

// serialNumber is a URN UUID derived from the image's digest (the version
// bits of a name-based one), so that the same image has the same SBOM.
func serialNumber(digest v1.Hash) string {
	sum := sha256.Sum256([]byte("events-apiserver image SBOM " + digest.String()))
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	return fmt.Sprintf("urn:uuid:%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

func appendProperty(props *[]cdx.Property, name, value string) *[]cdx.Property {
	var out []cdx.Property
	if props != nil {
		out = slices.Clone(*props)
	}
	out = append(out, cdx.Property{Name: name, Value: value})
	return &out
}

func extractCommand(args []string) error {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	image := fs.String("image", "", "image archive hack/build-image.sh wrote (OCI layout in a tar)")
	output := fs.String("output", "", "file to write the image's entrypoint to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *image == "" || *output == "" {
		return errors.New("extract: --image and --output are required")
	}
	img, err := imageOfArchive(*image)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if len(cfg.Config.Entrypoint) == 0 {
		return errors.New("the image has no entrypoint")
	}
	entrypoint := cfg.Config.Entrypoint[0]
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	found := false
	for _, layer := range layers {
		ok, err := extractFile(layer, entrypoint, *output)
		if err != nil {
			return err
		}
		found = found || ok
	}
	if !found {
		return fmt.Errorf("the image's entrypoint %s is not a file of its layers", entrypoint)
	}
	return os.Chmod(*output, 0o755)
}

// extractFile writes the file at p in layer to output, if the layer has it.
func extractFile(layer v1.Layer, p, output string) (bool, error) {
	rc, err := layer.Uncompressed()
	if err != nil {
		return false, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if h.Typeflag == tar.TypeReg && path.Clean("/"+h.Name) == p {
			return true, writeFile(output, tr)
		}
	}
}
