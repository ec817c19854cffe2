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

package leaderelection

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
)

// ErrFenced is the error of a write refused because, when etcd applied it,
// the replica that made it no longer led the election it made it for (its
// campaign key was gone: it was paused or cut off past its lease, and
// another replica may lead). It is never a conflict to retry: the term
// that made the write is over.
var ErrFenced = errors.New("refused: this replica no longer leads the election")

// Fence is one term of leadership: the leader's campaign key and the
// revision that created it. The key exists with that create revision
// exactly as long as the term lasts; a later term, of this replica or
// another, has another key. A write conditioned on the fence (Cmp) is
// applied by etcd only while the term lasts, whatever the writer's clock
// or pauses.
type Fence struct {
	// Election is the election's name.
	Election string
	// Key is the campaign key, in the key space of the election's client
	// (under its namespace, if any).
	Key string
	// Revision is the key's create revision (concurrency.Election.Rev).
	Revision int64
}

// Cmp is the comparison that holds while the term lasts, for a client
// whose keys are the election client's prefixed by prefix: "" for the
// election's client or one under the same namespace, the namespace for a
// client at the root of etcd's key space.
func (f Fence) Cmp(prefix string) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(prefix+f.Key), "=", f.Revision)
}

// term is a Fence in a context, with what ends the term's work.
type term struct {
	Fence
	// lost ends the leader's context: a refused write is news that the
	// term is over, which the session's keepalive may learn later.
	lost func()
}

type fenceKey struct{}

// withFence returns ctx carrying f; a write refused under it calls lost.
func withFence(ctx context.Context, f Fence, lost func()) context.Context {
	return context.WithValue(ctx, fenceKey{}, &term{Fence: f, lost: lost})
}

// FenceFrom returns the fence of the term ctx was made for: Run gives one
// to the context of its lead function, and every context made from it
// carries it too. False for a context made outside a term.
func FenceFrom(ctx context.Context) (Fence, bool) {
	t, ok := ctx.Value(fenceKey{}).(*term)
	if !ok {
		return Fence{}, false
	}
	return t.Fence, true
}

// NewKV returns kv whose writes (Put, Delete, Txn, and Do of any of them)
// are, under a context that carries a fence (FenceFrom), one transaction
// that applies them only if the fence holds: Txn becomes
// If(fence).Then(OpTxn(its compares, then, else)) and answers exactly what
// the inner transaction answered (with the outer header). A write whose
// fence no longer holds returns ErrFenced, is counted and logged, and ends
// the term's context. Reads, writes under a context without a fence and
// Compact (which etcd cannot condition) go to kv as they are.
//
// prefix is what kv's keys lack of the election client's key space (see
// Fence.Cmp): "" for a client under the same namespace as the election's.
func NewKV(kv clientv3.KV, prefix string) clientv3.KV {
	registerMetrics()
	return fencedKV{KV: kv, prefix: prefix}
}

type fencedKV struct {
	clientv3.KV
	prefix string
}

func (kv fencedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	resp, err := kv.Do(ctx, clientv3.OpPut(key, val, opts...))
	if err != nil {
		return nil, err
	}
	return resp.Put(), nil
}

func (kv fencedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	resp, err := kv.Do(ctx, clientv3.OpDelete(key, opts...))
	if err != nil {
		return nil, err
	}
	return resp.Del(), nil
}

func (kv fencedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	t, ok := ctx.Value(fenceKey{}).(*term)
	if write := op.IsPut() || op.IsDelete() || op.IsTxn(); !ok || !write {
		return kv.KV.Do(ctx, op)
	}
	resp, err := kv.commit(ctx, t, op)
	if err != nil {
		return clientv3.OpResponse{}, err
	}
	inner := resp.Responses[0]
	switch {
	case op.IsPut():
		put := (*clientv3.PutResponse)(inner.GetResponsePut())
		put.Header = resp.Header
		return put.OpResponse(), nil
	case op.IsDelete():
		del := (*clientv3.DeleteResponse)(inner.GetResponseDeleteRange())
		del.Header = resp.Header
		return del.OpResponse(), nil
	default:
		txn := (*clientv3.TxnResponse)(inner.GetResponseTxn())
		txn.Header = resp.Header
		return txn.OpResponse(), nil
	}
}

func (kv fencedKV) Txn(ctx context.Context) clientv3.Txn {
	if _, ok := ctx.Value(fenceKey{}).(*term); !ok {
		return kv.KV.Txn(ctx)
	}
	return &fencedTxn{kv: kv, ctx: ctx}
}

// commit applies op only if t's fence holds.
func (kv fencedKV) commit(ctx context.Context, t *term, op clientv3.Op) (*clientv3.TxnResponse, error) {
	resp, err := kv.KV.Txn(ctx).If(t.Cmp(kv.prefix)).Then(op).Commit()
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		fencedWrites.WithLabelValues(t.Election).Inc()
		klog.FromContext(ctx).Info("Write refused: this replica no longer leads; stopping the elected work",
			"election", t.Election, "key", t.Key, "revision", t.Revision)
		t.lost()
		return nil, fmt.Errorf("%w %q (term of key %s, revision %d)", ErrFenced, t.Election, t.Key, t.Revision)
	}
	return resp, nil
}

// fencedTxn collects a transaction, to commit it nested under a fence.
type fencedTxn struct {
	kv  fencedKV
	ctx context.Context

	cmps             []clientv3.Cmp
	thenOps, elseOps []clientv3.Op
}

func (txn *fencedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	txn.cmps = append(txn.cmps, cs...)
	return txn
}

func (txn *fencedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	txn.thenOps = append(txn.thenOps, ops...)
	return txn
}

func (txn *fencedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	txn.elseOps = append(txn.elseOps, ops...)
	return txn
}

func (txn *fencedTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := txn.kv.Do(txn.ctx, clientv3.OpTxn(txn.cmps, txn.thenOps, txn.elseOps))
	if err != nil {
		return nil, err
	}
	return resp.Txn(), nil
}
