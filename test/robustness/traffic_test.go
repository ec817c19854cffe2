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
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-events/events-apiserver/test/robustness/validate"
)

// The key space: few names, so that creates collide and updates, patches
// and deletes find their events; few values of each selected field, so
// that selectors match some and updates move events in and out of them.
var (
	namespaces = []string{"robustness-a", "robustness-b"}
	reasons    = []string{"Started", "Pulled", "Failed"}
	eventTypes = []string{corev1.EventTypeNormal, corev1.EventTypeWarning}
	colors     = []string{"red", "blue", ""}
)

// requestTimeout bounds a client's request (an update's get and write, a
// list's pages): a request the server holds longer is counted as such
// and the client goes on.
const requestTimeout = 15 * time.Second

// futureTimeout bounds a list at a revision not yet written.
const futureTimeout = 5 * time.Second

const (
	eventNames = 20
	pods       = 8
)

// traffic is the clients of one run.
type traffic struct {
	seed   uint64
	rec    *record
	client kubernetes.Interface
	// etcd is read for its revision after each page of history.
	etcd *clientv3.Client
	// start is when the run started: the widest history window's.
	start time.Time
}

// rng is a client's random source, from the run's seed and the client.
func (tr *traffic) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(tr.seed, stream))
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func randomLabels(r *rand.Rand) map[string]string {
	if c := pick(r, colors); c != "" {
		return map[string]string{"color": c}
	}
	return nil
}

// selector is a random field and label selector, spelled for events.k8s.io
// or core/v1.
func randomSelector(r *rand.Rand, core bool) validate.Selector {
	var s validate.Selector
	regarding := "regarding.name"
	if core {
		regarding = "involvedObject.name"
	}
	switch r.IntN(6) {
	case 0:
		s.Field = regarding + "=pod-" + strconv.Itoa(r.IntN(pods))
	case 1:
		s.Field = "reason=" + pick(r, reasons)
	case 2:
		s.Field = "type=" + pick(r, eventTypes)
	case 3:
		s.Field = "reason!=" + pick(r, reasons) + ",type=" + pick(r, eventTypes)
	}
	switch r.IntN(4) {
	case 0:
		s.Label = "color=" + pick(r, colors[:2])
	case 1:
		s.Label = "color in (red,blue)"
	case 2:
		s.Label = "!color"
	}
	if r.IntN(3) > 0 {
		s.Namespace = pick(r, namespaces)
	}
	return s
}

// requests runs random writes, lists and gets until ctx is done.
func (tr *traffic) requests(ctx context.Context, id int) {
	r := tr.rng(uint64(id))
	for n := 0; ctx.Err() == nil; n++ {
		tr.request(ctx, r, id, n)
	}
}

// request runs one random request, or the few of an update or a paged
// list, each bounded by requestTimeout.
func (tr *traffic) request(ctx context.Context, r *rand.Rand, id, n int) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	op := fmt.Sprintf("seed=%d client=%d op=%d", tr.seed, id, n)
	switch x := r.IntN(100); {
	case x < 25:
		tr.create(ctx, r, id, op)
	case x < 37:
		tr.update(ctx, r, op)
	case x < 49:
		tr.patch(ctx, r, op)
	case x < 55:
		tr.delete(ctx, r, op)
	case x < 56:
		tr.deleteCollection(ctx, r, op)
	case x < 81:
		tr.list(ctx, r, op)
	case x < 85:
		tr.history(ctx, r, op)
	default:
		tr.get(ctx, r, op)
	}
}

func (tr *traffic) create(ctx context.Context, r *rand.Rand, id int, op string) {
	start := time.Now()
	ns := pick(r, namespaces)
	meta := metav1.ObjectMeta{Name: fmt.Sprintf("ev-%02d", r.IntN(eventNames)), Labels: randomLabels(r)}
	regarding := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "pod-" + strconv.Itoa(r.IntN(pods))}
	reason, typ := pick(r, reasons), pick(r, eventTypes)
	var rv string
	var err error
	if r.IntN(2) == 0 {
		var e *eventsv1.Event
		e, err = tr.client.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
			ObjectMeta:          meta,
			EventTime:           metav1.NewMicroTime(time.Now()),
			ReportingController: "example.com/robustness",
			ReportingInstance:   fmt.Sprintf("client-%d", id),
			Action:              "Testing",
			Reason:              reason,
			Regarding:           regarding,
			Note:                op,
			Type:                typ,
		}, metav1.CreateOptions{})
		if err == nil {
			rv = e.ResourceVersion
		}
	} else {
		now := metav1.Now()
		var e *corev1.Event
		e, err = tr.client.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     meta,
			InvolvedObject: regarding,
			Reason:         reason,
			Message:        op,
			Source:         corev1.EventSource{Component: fmt.Sprintf("robustness-%d", id)},
			FirstTimestamp: now,
			LastTimestamp:  now,
			Count:          1,
			Type:           typ,
		}, metav1.CreateOptions{})
		if err == nil {
			rv = e.ResourceVersion
		}
	}
	tr.rec.wrote(rv)
	tr.rec.outcome("create", op+" create "+ns+"/"+meta.Name, start, err, writeAllowed)
}

// update reads an event (a consistent get) and writes it back through
// core/v1, which lets reason, type and the regarding object of an event
// outside a series change, with a new label: the updates that move events
// in and out of selectors.
func (tr *traffic) update(ctx context.Context, r *rand.Rand, op string) {
	ns, name := pick(r, namespaces), fmt.Sprintf("ev-%02d", r.IntN(eventNames))
	e, ok := tr.getCore(ctx, ns, name, "", op+" update's get "+ns+"/"+name)
	if !ok {
		return
	}
	// An event of a series (folding makes them) keeps what identifies the
	// series: the server refuses such a change with 422.
	identity := r.IntN(4)
	if e.Series != nil {
		identity = 3
	}
	switch identity {
	case 0:
		e.Reason = pick(r, reasons)
	case 1:
		e.Type = pick(r, eventTypes)
	case 2:
		e.InvolvedObject.Name = "pod-" + strconv.Itoa(r.IntN(pods))
	}
	e.Labels = randomLabels(r)
	start := time.Now()
	u, err := tr.client.CoreV1().Events(ns).Update(ctx, e, metav1.UpdateOptions{})
	if err == nil {
		tr.rec.wrote(u.ResourceVersion)
	}
	tr.rec.outcome("update", op+" update "+ns+"/"+name, start, err, writeAllowed)
}

// patch sets or removes the color label with a merge patch, through either
// version.
func (tr *traffic) patch(ctx context.Context, r *rand.Rand, op string) {
	start := time.Now()
	ns, name := pick(r, namespaces), fmt.Sprintf("ev-%02d", r.IntN(eventNames))
	color := `null`
	if c := pick(r, colors); c != "" {
		color = strconv.Quote(c)
	}
	body := []byte(`{"metadata":{"labels":{"color":` + color + `}}}`)
	var rv string
	var err error
	if r.IntN(2) == 0 {
		var e *eventsv1.Event
		if e, err = tr.client.EventsV1().Events(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err == nil {
			rv = e.ResourceVersion
		}
	} else {
		var e *corev1.Event
		if e, err = tr.client.CoreV1().Events(ns).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{}); err == nil {
			rv = e.ResourceVersion
		}
	}
	tr.rec.wrote(rv)
	tr.rec.outcome("patch", op+" patch "+ns+"/"+name+" "+string(body), start, err, writeAllowed)
}

func (tr *traffic) delete(ctx context.Context, r *rand.Rand, op string) {
	start := time.Now()
	ns, name := pick(r, namespaces), fmt.Sprintf("ev-%02d", r.IntN(eventNames))
	var err error
	if r.IntN(2) == 0 {
		err = tr.client.EventsV1().Events(ns).Delete(ctx, name, metav1.DeleteOptions{})
	} else {
		err = tr.client.CoreV1().Events(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	tr.rec.outcome("delete", op+" delete "+ns+"/"+name, start, err, writeAllowed)
}

func (tr *traffic) deleteCollection(ctx context.Context, r *rand.Rand, op string) {
	start := time.Now()
	ns, color := pick(r, namespaces), pick(r, colors[:2])
	err := tr.client.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "color=" + color})
	tr.rec.outcome("deletecollection", op+" deletecollection "+ns+" color="+color, start, err, writeAllowed)
}

// randomRV is a resourceVersion to read at: "", "0", or one below, at or
// above the last written, and its resourceVersionMatch.
func (tr *traffic) randomRV(r *rand.Rand) (rv string, match metav1.ResourceVersionMatch) {
	current := tr.rec.watermark.Load()
	switch r.IntN(7) {
	case 0, 1:
		return "", ""
	case 2:
		return "0", ""
	case 3:
		return strconv.FormatInt(max(1, current-1-r.Int64N(300)), 10), metav1.ResourceVersionMatchExact
	case 4:
		return strconv.FormatInt(max(1, current), 10), metav1.ResourceVersionMatchExact
	case 5:
		return strconv.FormatInt(max(1, current-r.Int64N(50)), 10), metav1.ResourceVersionMatchNotOlderThan
	default:
		return strconv.FormatInt(current+1+r.Int64N(20), 10), metav1.ResourceVersionMatchNotOlderThan
	}
}

// list pages through a random list, abandoning it at times.
func (tr *traffic) list(ctx context.Context, r *rand.Rand, op string) {
	core := r.IntN(2) == 0
	sel := randomSelector(r, core)
	rv, match := tr.randomRV(r)
	limit := []int64{0, 3, 10, 50}[r.IntN(4)]
	l := validate.List{
		Op:        fmt.Sprintf("%s list core=%v ns=%q field=%q label=%q rv=%q match=%q limit=%d", op, core, sel.Namespace, sel.Field, sel.Label, rv, match, limit),
		Sel:       sel,
		RV:        rv,
		Match:     string(match),
		Watermark: tr.rec.watermark.Load(),
	}
	// A list at a revision not yet written waits for the other clients'
	// writes (or answers 504 after a wait): counted apart, and bounded
	// by futureTimeout so that a wait the server does not end stalls
	// this client only briefly.
	first := "list"
	if n, err := strconv.ParseInt(rv, 10, 64); err == nil && n > l.Watermark {
		first = "list-future"
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, futureTimeout)
		defer cancel()
	}
	opts := metav1.ListOptions{FieldSelector: sel.Field, LabelSelector: sel.Label, ResourceVersion: rv, ResourceVersionMatch: match, Limit: limit}
	for {
		start := time.Now()
		page, cont, err := tr.listPage(ctx, core, sel.Namespace, opts)
		kind := first
		if opts.Continue != "" {
			kind = "list-continue"
		}
		tr.rec.outcome(kind, l.Op, start, err, readAllowed(rv != "" && rv != "0" || opts.Continue != "", false))
		if err != nil {
			break
		}
		page.Continue = cont != ""
		l.Pages = append(l.Pages, page)
		if cont == "" {
			l.Complete = true
			break
		}
		if r.IntN(10) == 0 {
			break // abandoned
		}
		opts = metav1.ListOptions{FieldSelector: sel.Field, LabelSelector: sel.Label, Limit: limit, Continue: cont}
	}
	tr.rec.addList(l)
}

// historyPages bounds the pages a history list reads before it is
// abandoned: the archive holds every event of the run, and the check is
// per page.
const historyPages = 5

// history pages through a list with history.since: from before the run
// or from a few seconds to a minute back, with a random selection.
func (tr *traffic) history(ctx context.Context, r *rand.Rand, op string) {
	core := r.IntN(2) == 0
	sel := randomSelector(r, core)
	since := tr.start.Add(-time.Minute)
	if r.IntN(2) == 0 {
		since = time.Now().Add(-time.Duration(5+r.IntN(55)) * time.Second)
	}
	since = since.Truncate(time.Second) // RFC 3339 as sent: seconds
	field := "history.since=" + since.UTC().Format(time.RFC3339)
	if sel.Field != "" {
		field = sel.Field + "," + field
	}
	limit := []int64{3, 10, 50, 500}[r.IntN(4)]
	l := validate.HistoryList{
		Op:    fmt.Sprintf("%s history core=%v ns=%q field=%q label=%q limit=%d", op, core, sel.Namespace, field, sel.Label, limit),
		Sel:   sel,
		Since: since,
	}
	opts := metav1.ListOptions{FieldSelector: field, LabelSelector: sel.Label, Limit: limit}
	for range 1 + r.IntN(historyPages) {
		watermark, start := tr.rec.watermark.Load(), time.Now()
		page, cont, err := tr.listPage(ctx, core, sel.Namespace, opts)
		tr.rec.outcome("history", l.Op, start, err, readAllowed(opts.Continue != "", false))
		if err != nil {
			break
		}
		l.Pages = append(l.Pages, validate.HistoryPage{Items: page.Items, Continue: cont != "", Watermark: watermark, Head: tr.etcdHead(ctx)})
		if cont == "" {
			break
		}
		opts.Continue = cont
	}
	tr.rec.addHistory(l)
}

// etcdHead is etcd's revision now, 0 when etcd does not answer in time.
func (tr *traffic) etcdHead(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := tr.etcd.Get(ctx, eventsPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0
	}
	return resp.Header.Revision
}

func (tr *traffic) listPage(ctx context.Context, core bool, ns string, opts metav1.ListOptions) (validate.Page, string, error) {
	var page validate.Page
	var list runtime.Object
	var err error
	if core {
		list, err = tr.client.CoreV1().Events(ns).List(ctx, opts)
	} else {
		list, err = tr.client.EventsV1().Events(ns).List(ctx, opts)
	}
	if err != nil {
		return page, "", err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return page, "", err
	}
	page.RV, _ = strconv.ParseInt(lm.GetResourceVersion(), 10, 64)
	err = meta.EachListItem(list, func(o runtime.Object) error {
		page.Items = append(page.Items, item(o))
		return nil
	})
	return page, lm.GetContinue(), err
}

// item is an object's key and resourceVersion.
func item(o runtime.Object) validate.Item {
	m, err := meta.Accessor(o)
	if err != nil {
		return validate.Item{Key: fmt.Sprintf("<%T>", o)}
	}
	rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	return validate.Item{Key: m.GetNamespace() + "/" + m.GetName(), RV: rv}
}

func (tr *traffic) get(ctx context.Context, r *rand.Rand, op string) {
	ns, name := pick(r, namespaces), fmt.Sprintf("ev-%02d", r.IntN(eventNames))
	rv := pick(r, []string{"", "0"})
	if r.IntN(2) == 0 {
		tr.getCore(ctx, ns, name, rv, fmt.Sprintf("%s get core %s/%s rv=%q", op, ns, name, rv))
		return
	}
	watermark, start := tr.rec.watermark.Load(), time.Now()
	e, err := tr.client.EventsV1().Events(ns).Get(ctx, name, metav1.GetOptions{ResourceVersion: rv})
	o := fmt.Sprintf("%s get %s/%s rv=%q", op, ns, name, rv)
	tr.rec.outcome("get", o, start, err, readAllowed(false, true))
	if err == nil {
		tr.rec.addGet(validate.Get{Op: o, Key: ns + "/" + name, RV: rv, Watermark: watermark, Got: item(e).RV})
	}
}

// getCore is a core/v1 get, recorded.
func (tr *traffic) getCore(ctx context.Context, ns, name, rv, op string) (*corev1.Event, bool) {
	watermark, start := tr.rec.watermark.Load(), time.Now()
	e, err := tr.client.CoreV1().Events(ns).Get(ctx, name, metav1.GetOptions{ResourceVersion: rv})
	tr.rec.outcome("get", op, start, err, readAllowed(false, true))
	if err != nil {
		return nil, false
	}
	tr.rec.addGet(validate.Get{Op: op, Key: ns + "/" + name, RV: rv, Watermark: watermark, Got: item(e).RV})
	return e, true
}

// watchRequest is a watch to open.
type watchRequest struct {
	core bool
	sel  validate.Selector
	opts metav1.ListOptions
	// resumes is the op of the watch this one resumes, if any.
	resumes string
}

// randomWatch is a watch from "", "0", an old, the current, a near or a
// far future resourceVersion, with initial events or not, bookmarks or not.
func (tr *traffic) randomWatch(r *rand.Rand) watchRequest {
	w := watchRequest{core: r.IntN(2) == 0}
	w.sel = randomSelector(r, w.core)
	w.opts = metav1.ListOptions{FieldSelector: w.sel.Field, LabelSelector: w.sel.Label, AllowWatchBookmarks: r.IntN(2) == 0}
	current := tr.rec.watermark.Load()
	switch r.IntN(7) {
	case 0:
	case 1:
		w.opts.ResourceVersion = "0"
	case 2:
		w.opts.ResourceVersion = strconv.FormatInt(max(1, current-1-r.Int64N(300)), 10)
	case 3:
		w.opts.ResourceVersion = strconv.FormatInt(max(1, current), 10)
	case 4:
		w.opts.ResourceVersion = strconv.FormatInt(current+1+r.Int64N(20), 10)
	case 5:
		// Far ahead: a revision the watch does not reach before its end.
		w.opts.ResourceVersion = strconv.FormatInt(current+10000+r.Int64N(10000), 10)
	default:
		w.opts.ResourceVersion = pick(r, []string{"", "0"})
		w.opts.SendInitialEvents = ptr.To(true)
		w.opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		w.opts.AllowWatchBookmarks = true
	}
	return w
}

// watcher opens random watches, reads each for a while and then, mostly,
// resumes it from the last resourceVersion it read.
func (tr *traffic) watcher(ctx context.Context, id int) {
	r := tr.rng(1000 + uint64(id))
	var next *watchRequest
	for n := 0; ctx.Err() == nil; n++ {
		req := tr.randomWatch(r)
		if next != nil {
			req, next = *next, nil
		}
		op := fmt.Sprintf("seed=%d watcher=%d watch=%d core=%v ns=%q field=%q label=%q rv=%q sendInitialEvents=%v bookmarks=%v",
			tr.seed, id, n, req.core, req.sel.Namespace, req.sel.Field, req.sel.Label, req.opts.ResourceVersion,
			req.opts.SendInitialEvents != nil, req.opts.AllowWatchBookmarks)
		if req.resumes != "" {
			op += " resumes: " + req.resumes
		}
		w := tr.watch(ctx, req, op, time.Duration(2+r.IntN(11))*time.Second)
		last := lastRV(w.Events)
		if last > 0 && r.IntN(10) < 7 {
			resumed := req
			resumed.opts.ResourceVersion = strconv.FormatInt(last, 10)
			resumed.opts.SendInitialEvents, resumed.opts.ResourceVersionMatch = nil, ""
			resumed.opts.AllowWatchBookmarks = r.IntN(2) == 0
			resumed.resumes = op
			next = &resumed
		}
	}
}

func lastRV(events []validate.Event) int64 {
	var last int64
	for _, e := range events {
		last = max(last, e.Item.RV)
	}
	return last
}

// watch runs one watch of d (timeoutSeconds; until the server ends it or
// ctx is done) and records every event.
func (tr *traffic) watch(ctx context.Context, req watchRequest, op string, d time.Duration) validate.Watch {
	w := validate.Watch{
		Op:                op,
		Sel:               req.sel,
		RV:                req.opts.ResourceVersion,
		SendInitialEvents: req.opts.SendInitialEvents != nil,
		Bookmarks:         req.opts.AllowWatchBookmarks,
		Watermark:         tr.rec.watermark.Load(),
	}
	named := w.RV != "" && w.RV != "0"
	// The server ends the watch after d, and the cacher's rule sends a
	// bookmark 2 s before (bookmarks on); the client waits a little longer.
	req.opts.TimeoutSeconds = ptr.To(int64(d / time.Second))
	ctx, cancel := context.WithTimeout(ctx, d+10*time.Second)
	defer cancel()
	var wi watch.Interface
	var err error
	if req.core {
		wi, err = tr.client.CoreV1().Events(req.sel.Namespace).Watch(ctx, req.opts)
	} else {
		wi, err = tr.client.EventsV1().Events(req.sel.Namespace).Watch(ctx, req.opts)
	}
	kind := "watch"
	if req.resumes != "" {
		kind = "watch-resume"
	}
	if err != nil {
		tr.rec.outcome(kind, op, time.Time{}, err, readAllowed(named, false))
		return w
	}
	defer wi.Stop()
	for e := range wi.ResultChan() {
		switch e.Type {
		case watch.Error:
			tr.rec.outcome(kind, op, time.Time{}, apierrors.FromObject(e.Object), readAllowed(named || w.SendInitialEvents, false))
			tr.rec.addWatch(w)
			return w
		case watch.Bookmark:
			m, err := meta.Accessor(e.Object)
			if err != nil {
				continue
			}
			rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
			w.Events = append(w.Events, validate.Event{Type: validate.Bookmark, Item: validate.Item{RV: rv},
				InitialEnd: m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"})
		default:
			w.Events = append(w.Events, validate.Event{Type: string(e.Type), Item: item(e.Object)})
		}
	}
	tr.rec.outcome(kind, op, time.Time{}, nil, nil)
	tr.rec.addWatch(w)
	return w
}
