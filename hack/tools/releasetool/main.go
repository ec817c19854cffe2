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

// Command releasetool records what a release holds and signs it, for
// hack/release.sh:
//
//	releasetool image-sbom --image ARCHIVE --binary-sbom BOM --repository R --version V --output FILE
//	releasetool extract --image ARCHIVE --output FILE
//	releasetool sign --key KEY [--public-key FILE] FILE...
//	releasetool verify --key PUB FILE...
//
// image-sbom writes a CycloneDX SBOM of the image in ARCHIVE (the archive
// hack/build-image.sh writes): the image as a container component named by
// its digest, every file of its layers with its SHA-256, and the binary's
// module graph (BOM, which cyclonedx-gomod read from the binary's build
// information) nested in the binary's file.
//
// extract writes the image's entrypoint, the binary whose module graph
// cyclonedx-gomod reads.
//
// sign writes FILE.sig for each FILE as `cosign sign-blob --key` does: the
// base64 of an ASN.1 DER ECDSA signature over the SHA-256 of the file, so
// `cosign verify-blob --key cosign.pub --signature FILE.sig FILE` verifies
// it. KEY is a PEM private key: cosign's encrypted key (cosign
// generate-key-pair; its password in COSIGN_PASSWORD, as cosign reads it),
// PKCS#8 or SEC 1; ECDSA P-256 is what cosign generates. verify checks the
// signatures with the public key, as cosign verify-blob would.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: releasetool image-sbom|extract|sign|verify [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "image-sbom":
		err = imageSBOMCommand(args)
	case "extract":
		err = extractCommand(args)
	case "sign":
		err = signCommand(args)
	case "verify":
		err = verifyCommand(args)
	default:
		err = fmt.Errorf("unknown command %q: want image-sbom, extract, sign or verify", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "releasetool:", err)
		os.Exit(1)
	}
}
