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

package apiserver

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/pkg/registry/event/chains"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// newChainAnnotator returns the controller that resolves again the chains
// that stopped short and, when kube-apiserver writes events straight into
// etcd (offload mode, unannotated), gives those events theirs, reading etcd
// as the store does, through a client of its own, and writing through the
// store.
func (c CompletedConfig) newChainAnnotator(store *eventstorage.REST, resolver eventregistry.ChainResolver, unannotated bool) (*chains.Annotator, error) {
	options, err := c.eventsStorageOptions()
	if err != nil {
		return nil, err
	}
	storage := options.StorageConfig.Config
	seals, err := c.chainSealer()
	if err != nil {
		return nil, err
	}
	return chains.NewAnnotator(chains.Config{
		Events:         store,
		Chains:         resolver,
		Unannotated:    unannotated,
		Seals:          seals,
		NewClient:      func() (*clientv3.Client, error) { return NewEtcdClient(storage) },
		StoragePrefix:  storage.Prefix,
		ResourcePrefix: options.ResourcePrefix,
		Codec:          storage.Codec,
		Transformer:    storage.Transformer,
	})
}
