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

package revision

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
)

// TestStore checks a mark's round trip through etcd, its absence, and that
// a value that is not a mark is an error naming it.
func TestStore(t *testing.T) {
	server, _ := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	kv := server.V3Client.Client
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		put     string // a raw value stored first, if any
		write   *Mark
		want    Mark
		found   bool
		wantErr string
	}{
		{name: "no mark yet"},
		{name: "written, read back", write: &Mark{Revision: 41, Time: at}, want: Mark{Revision: 41, Time: at}, found: true},
		{name: "rewritten, the last one", put: `{"revision":7}`, write: &Mark{Revision: 9, Time: at}, want: Mark{Revision: 9, Time: at}, found: true},
		{name: "not a mark", put: "late", wantErr: `decoding the test mark "late"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s := Store{Key: "/test/" + strings.ReplaceAll(tc.name, " ", "-"), Name: "test mark"}
			if tc.put != "" {
				if _, err := kv.Put(ctx, s.Key, tc.put); err != nil {
					t.Fatal(err)
				}
			}
			if tc.write != nil {
				if err := s.Write(ctx, kv, *tc.write); err != nil {
					t.Fatal(err)
				}
			}
			got, found, err := s.Read(ctx, kv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if found != tc.found {
				t.Errorf("found %v, want %v", found, tc.found)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mark (-want +got):\n%s", diff)
			}
		})
	}
}
