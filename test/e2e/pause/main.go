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

// Command pause is the test cluster's pod sandbox ("pause") image: it holds
// the pod's namespaces open, reaps the children it inherits as a pod's init
// process, and exits on SIGTERM or SIGINT. A workload's steady container
// runs it too. test/e2e packs it into an image the way hack/build-image.sh
// packs the server.
//
// With the arguments "post URL...", it is instead a client with no
// credentials and no CA, as any pod of the cluster could be: it posts an
// empty form to each URL, prints "URL: STATUS" or "URL: error: ..." on a
// line, and exits.
package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "post" {
		post(os.Args[2:])
		return
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

// post posts an empty form to each URL without credentials, trusting any
// certificate (an outsider has no CA to verify with), and prints what
// each answered.
func post(urls []string) {
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // an outsider without the archive's CA
	}
	for _, u := range urls {
		resp, err := client.PostForm(u, url.Values{"query": {"*"}})
		if err != nil {
			fmt.Printf("%s: error: %v\n", u, err)
			continue
		}
		_ = resp.Body.Close()
		fmt.Printf("%s: %s\n", u, resp.Status)
	}
}
