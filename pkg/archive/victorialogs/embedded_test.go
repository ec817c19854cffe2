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

package victorialogs

import (
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/kube-events/events-apiserver/pkg/archive/archivetest"
)

func TestEmbedded(t *testing.T) {
	archivetest.Run(t, func(t *testing.T) archivetest.Engine {
		_, ctx := ktesting.NewTestContext(t)
		retention := 48 * time.Hour
		a, err := OpenEmbedded(ctx, EmbeddedConfig{Dir: t.TempDir(), Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := a.Close(); err != nil {
				t.Error(err)
			}
		})
		return archivetest.Engine{Archive: a, Retention: retention}
	}, archivetest.Options{})
}
