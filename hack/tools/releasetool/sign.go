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
	"bytes"
	"crypto"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// passwordEnv is where cosign reads the password of its encrypted keys.
const passwordEnv = "COSIGN_PASSWORD"

// signatureSuffix names a file's signature beside it, as cosign's
// examples do.
const signatureSuffix = ".sig"

func signCommand(args []string) error {
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	key := fs.String("key", "", "PEM private key (cosign's encrypted key with "+passwordEnv+", PKCS#8 or SEC 1)")
	publicKey := fs.String("public-key", "", "write the key's public half here (PEM), for cosign verify-blob --key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" || fs.NArg() == 0 {
		return errors.New("sign: --key and at least one file are required")
	}
	signer, err := loadSigner(*key)
	if err != nil {
		return err
	}
	if *publicKey != "" {
		pub, err := signer.PublicKey()
		if err != nil {
			return err
		}
		pem, err := cryptoutils.MarshalPublicKeyToPEM(pub)
		if err != nil {
			return err
		}
		if err := os.WriteFile(*publicKey, pem, 0o644); err != nil {
			return err
		}
	}
	for _, file := range fs.Args() {
		if err := signFile(signer, file); err != nil {
			return err
		}
	}
	return nil
}

// loadSigner reads a PEM private key with SHA-256 as its hash, asking
// COSIGN_PASSWORD for the password of an encrypted one.
func loadSigner(path string) (signature.Signer, error) {
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	password := func(bool) ([]byte, error) { return []byte(os.Getenv(passwordEnv)), nil }
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, password)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key %s: %w", path, err)
	}
	signer, err := signature.LoadSigner(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("the signing key %s: %w", path, err)
	}
	return signer, nil
}

// signFile writes file's signature, base64 as cosign sign-blob prints it.
func signFile(signer signature.Signer, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sig, err := signer.SignMessage(f)
	if err != nil {
		return fmt.Errorf("signing %s: %w", file, err)
	}
	return os.WriteFile(file+signatureSuffix, []byte(base64.StdEncoding.EncodeToString(sig)), 0o644)
}

func verifyCommand(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	key := fs.String("key", "", "PEM public key the files were signed for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" || fs.NArg() == 0 {
		return errors.New("verify: --key and at least one file are required")
	}
	verifier, err := signature.LoadVerifierFromPEMFile(*key, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("reading the public key %s: %w", *key, err)
	}
	var errs []error
	for _, file := range fs.Args() {
		if err := verifyFile(verifier, file); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Printf("%s: verified\n", file)
	}
	return errors.Join(errs...)
}

// verifyFile checks file against FILE.sig.
func verifyFile(verifier signature.Verifier, file string) error {
	encoded, err := os.ReadFile(file + signatureSuffix)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(encoded)))
	if err != nil {
		return fmt.Errorf("%s%s: %w", file, signatureSuffix, err)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := verifier.VerifySignature(bytes.NewReader(sig), f); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
