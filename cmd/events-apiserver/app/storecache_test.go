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

package app

import (
	"testing"

	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// TestStoreCacheFollowsTheWatchCacheFlags: the events store has the cache
// --store-cache names unless the generic flags turn the watch cache off
// for events, as the generic storage factory reads them.
func TestStoreCacheFollowsTheWatchCacheFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want eventstorage.StoreCache
	}{
		{name: "default", want: eventstorage.CompactStore},
		{name: "the watch cache asked", args: []string{"--store-cache=watch-cache"}, want: eventstorage.WatchCache},
		{name: "no watch cache", args: []string{"--watch-cache=false"}, want: eventstorage.NoStoreCache},
		{name: "no watch cache for events", args: []string{"--watch-cache-sizes=events#0"}, want: eventstorage.NoStoreCache},
		{name: "a size for another resource", args: []string{"--watch-cache-sizes=pods#0"}, want: eventstorage.CompactStore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := completed(t, tt.args...).storeCache()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("store cache %q, want %q", got, tt.want)
			}
		})
	}
}
