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

package robustness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kube-events/events-apiserver/test/robustness/validate"
)

// eventsPrefix is where the server keeps events in etcd (no
// --etcd-prefix): /registry/events/<namespace>/<name>.
const eventsPrefix = "/registry/events/"

// recorder follows etcd's revisions under eventsPrefix from the first one
// with a watch of its own (PrevKV, progress notifications) into a
// validate.History. Compaction must never pass it: Head is the revision up
// to which it has every change.
type recorder struct {
	client *clientv3.Client

	mu      sync.Mutex
	history *validate.History
	err     error
	done    chan struct{}
}

// startRecorder watches etcd from revision 1, before anything is written.
func startRecorder(ctx context.Context, client *clientv3.Client) *recorder {
	r := &recorder{client: client, history: validate.NewHistory(), done: make(chan struct{})}
	go r.follow(ctx)
	return r
}

func (r *recorder) follow(ctx context.Context) {
	defer close(r.done)
	for resp := range r.client.Watch(ctx, eventsPrefix, clientv3.WithPrefix(), clientv3.WithRev(1),
		clientv3.WithPrevKV(), clientv3.WithProgressNotify()) {
		if err := resp.Err(); err != nil {
			if resp.Canceled || resp.CompactRevision != 0 {
				r.fail(fmt.Errorf("etcd history watch ended: %w (compacted at %d)", err, resp.CompactRevision))
				return
			}
			continue // a leader loss: the client watches again from the next revision
		}
		for _, ev := range resp.Events {
			c, err := change(ev)
			if err == nil {
				r.mu.Lock()
				err = r.history.Append(c)
				r.mu.Unlock()
			}
			if err != nil {
				r.fail(err)
				return
			}
		}
		if resp.IsProgressNotify() {
			r.mu.Lock()
			r.history.Observe(resp.Header.Revision)
			r.mu.Unlock()
		}
	}
	if ctx.Err() == nil {
		r.fail(errors.New("etcd history watch closed"))
	}
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// Head is the revision up to which the recorder has every change, and
// the error that stopped it.
func (r *recorder) Head() (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.history.Head(), r.err
}

// catchUp waits until the recorder has every revision etcd has now.
func (r *recorder) catchUp(ctx context.Context, timeout time.Duration) (*validate.History, error) {
	target, err := r.client.Get(ctx, eventsPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("reading etcd's revision: %w", err)
	}
	if err := r.reach(ctx, target.Header.Revision, timeout); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.history, nil
}

// reach waits, at most timeout, until the recorder has every revision up
// to rev.
func (r *recorder) reach(ctx context.Context, rev int64, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		head, err := r.Head()
		if err != nil || head >= rev {
			return true, err
		}
		// Revisions of other keys (the server's election) reach the
		// recorder only as progress notifications. The request goes to
		// the watch stream of ctx's metadata: none, as the recorder's.
		return false, r.client.RequestProgress(ctx)
	})
	if err != nil {
		return fmt.Errorf("recording etcd's history up to %d: %w", rev, err)
	}
	return nil
}

// change is the validate.Change of an etcd event under eventsPrefix.
func change(ev *clientv3.Event) (validate.Change, error) {
	key := strings.TrimPrefix(string(ev.Kv.Key), eventsPrefix)
	c := validate.Change{Rev: ev.Kv.ModRevision, Key: key}
	if ev.Type == clientv3.EventTypeDelete {
		return c, nil
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(ev.Kv.Value, nil, nil)
	if err != nil {
		return c, fmt.Errorf("decoding %s at %d: %w", ev.Kv.Key, ev.Kv.ModRevision, err)
	}
	e, ok := obj.(*corev1.Event)
	if !ok {
		return c, fmt.Errorf("%s at %d holds a %T", ev.Kv.Key, ev.Kv.ModRevision, obj)
	}
	c.Object = &validate.Object{
		Namespace:     e.Namespace,
		Name:          e.Name,
		RegardingName: e.InvolvedObject.Name,
		Reason:        e.Reason,
		Type:          e.Type,
		Labels:        e.Labels,
		UID:           string(e.UID),
		Observed:      lastObserved(e),
	}
	if got := c.Object.Key(); got != key {
		return c, fmt.Errorf("%s at %d holds %s", ev.Kv.Key, ev.Kv.ModRevision, got)
	}
	return c, nil
}

// lastObserved is when the last occurrence e stands for was observed, as
// the server orders history pages: series.lastObservedTime, else
// lastTimestamp, else eventTime, else creationTimestamp.
func lastObserved(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}
