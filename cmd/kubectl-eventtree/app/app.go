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

// Package app is kubectl-eventtree: it resolves an object through the
// RESTMapper, lists the events of its ownership tree from the
// events.k8s.io/v1 API with the regarding.ancestor field selector and the
// history window, marks what is still live, and draws the tree with
// package eventtree.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	eventsv1beta1client "k8s.io/client-go/kubernetes/typed/events/v1beta1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"
	"k8s.io/component-base/version"

	"github.com/kube-events/events-apiserver/pkg/duration"
	"github.com/kube-events/events-apiserver/pkg/eventtree"
)

// The field selector terms the server answers (docs/history.md and the
// ancestor terms): an event about the object or one of its descendants,
// in a window of history.
const (
	FieldAncestor     = "regarding.ancestor"
	FieldHistorySince = "history.since"
	FieldType         = "type"
)

// DefaultWidth is the drawing's width when the output is no terminal and
// --width is not given.
const DefaultWidth = 120

// Clients are what the command reads through; tests replace them.
type Clients struct {
	Mapper meta.RESTMapper
	Events eventsv1client.EventsV1Interface
	// EventsV1beta1 is the version events-apiserver serves in a cluster
	// unless in takeover mode, where kube-apiserver keeps v1.
	EventsV1beta1 eventsv1beta1client.EventsV1beta1Interface
	Metadata      metadata.Interface
	// Namespace is the namespace to read, from the kubeconfig or -n.
	Namespace string
}

// Options are the command's flags and what it runs against.
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Since string
	Type  string
	// APIVersion is the events.k8s.io version to read: v1, v1beta1, or ""
	// for v1, then v1beta1 when v1 refuses the selector.
	APIVersion string
	Width      int
	NoColor    bool
	Live       bool
	// PageSize is the limit of each list request.
	PageSize int64

	// Now is the end of the time axis; time.Now unless a test sets it.
	Now func() time.Time
	// Clients, when set, are used instead of those of ConfigFlags.
	Clients *Clients
	// IsTerminal tells whether Out is a terminal and its width; when nil it
	// is asked of Out's file descriptor.
	IsTerminal func(out io.Writer) (width int, ok bool)
}

// NewOptions returns the defaults: a week, live objects merged in.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		IOStreams:   streams,
		Since:       "24h",
		Live:        true,
		PageSize:    500,
		Now:         time.Now,
	}
}

// NewCommand returns the kubectl-eventtree command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:   "kubectl eventtree TYPE/NAME [flags]",
		Short: "Draw an object's ownership tree with its events on a time axis",
		Long: `Draw an object's ownership tree (a Deployment, its ReplicaSets, their Pods, deleted
ones included) with each object's events and series on one time axis, and the
reasons of each object's events with their occurrences, Warnings first.

The events are read from events-apiserver's events.k8s.io/v1 API with the field
selector regarding.ancestor=<Kind>/<name> over the history window of --since.`,
		Example: `  # what happened to the Deployment web this week
  kubectl eventtree deployment/web -n shop --since 7d

  # only its Warnings, in the last 90 minutes, 160 columns wide
  kubectl eventtree deploy web --type Warning --since 90m --width 160`,
		Version:       version.Get().GitVersion,
		Args:          cobra.RangeArgs(1, 2),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Run(cmd.Context(), args)
		},
	}
	cmd.SetVersionTemplate("kubectl-eventtree {{.Version}}\n")
	flags := cmd.Flags()
	o.ConfigFlags.AddFlags(flags)
	flags.StringVar(&o.Since, "since", o.Since, "How far back to read: a duration (90m, 24h, 7d, 1d12h) or an RFC 3339 time; the server keeps 30 days of history")
	flags.StringVar(&o.APIVersion, "api-version", o.APIVersion, "The events.k8s.io version to read (v1 or v1beta1); by default v1, and v1beta1 when v1 refuses the selector (kube-apiserver serves v1 outside takeover mode)")
	flags.StringVar(&o.Type, "type", o.Type, "Only events of this type (Normal or Warning)")
	flags.IntVar(&o.Width, "width", o.Width, "Columns to draw in; the terminal's width by default, else 120")
	flags.BoolVar(&o.NoColor, "no-color", o.NoColor, "No colors even on a terminal (NO_COLOR in the environment too)")
	flags.BoolVar(&o.Live, "live", o.Live, "Ask the cluster which objects still exist: mark the deleted ones and add live ones without events")
	flags.Int64Var(&o.PageSize, "chunk-size", o.PageSize, "Events per list request")
	return cmd
}

// Run draws the tree of the object args names: TYPE/NAME or TYPE NAME.
func (o *Options) Run(ctx context.Context, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	clients, err := o.clients()
	if err != nil {
		return err
	}
	root, err := ResolveRoot(clients.Mapper, args)
	if err != nil {
		return err
	}
	now := o.Now()
	start, err := ParseSince(o.Since, now)
	if err != nil {
		return err
	}
	if o.Type != "" && o.Type != "Normal" && o.Type != "Warning" {
		return fmt.Errorf("--type %q: want Normal or Warning", o.Type)
	}

	versions := []string{"v1", "v1beta1"}
	switch o.APIVersion {
	case "":
	case "v1", "v1beta1":
		versions = []string{o.APIVersion}
	default:
		return fmt.Errorf("--api-version %q: want v1 or v1beta1", o.APIVersion)
	}
	selector := TreeSelector(root.Ref, start, o.Type)
	var events []eventsv1.Event
	for i, v := range versions {
		events, err = ListTreeEvents(ctx, clients.eventPages(v), selector, o.PageSize)
		if err == nil {
			break
		}
		if i == len(versions)-1 || !apierrors.IsBadRequest(err) {
			return fmt.Errorf("listing the events of %s in %s (events.k8s.io/%s): %w", root.Ref, clients.Namespace, v, err)
		}
	}
	tree := eventtree.Build(root.Ref, events)
	if o.Live {
		kinds, objects := liveObjects(ctx, clients, tree, events, root, o.ErrOut)
		tree.MergeLive(kinds, objects)
		tree.Sort()
	}

	width, color := o.Width, false
	if termWidth, ok := o.isTerminal(); ok {
		if width == 0 {
			width = termWidth
		}
		color = !o.NoColor && os.Getenv("NO_COLOR") == ""
	}
	if width == 0 {
		width = DefaultWidth
	}
	return eventtree.Render(o.Out, tree, eventtree.RenderOptions{
		Namespace: clients.Namespace,
		Start:     start,
		End:       now,
		Width:     width,
		Color:     color,
	})
}

func (o *Options) clients() (*Clients, error) {
	if o.Clients != nil {
		return o.Clients, nil
	}
	namespace, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	mapper, err := o.ConfigFlags.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	config, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &Clients{Mapper: mapper, Events: client.EventsV1(), EventsV1beta1: client.EventsV1beta1(), Metadata: metadataClient, Namespace: namespace}, nil
}

func (o *Options) isTerminal() (int, bool) {
	if o.IsTerminal != nil {
		return o.IsTerminal(o.Out)
	}
	f, ok := o.Out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0, true
	}
	return width, true
}

// Root is the object a tree is drawn for, with its resource.
type Root struct {
	Ref      eventtree.ObjectRef
	Resource schema.GroupVersionResource
}

// ResolveRoot reads TYPE/NAME (or TYPE NAME) the way kubectl does: the
// type a resource, its singular, short name or kind, optionally with its
// group (deployments.apps/web).
func ResolveRoot(mapper meta.RESTMapper, args []string) (Root, error) {
	var typ, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		typ, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		typ, name = args[0], args[1]
	default:
		return Root{}, fmt.Errorf("want one object, TYPE/NAME or TYPE NAME (deployment/web), got %q", strings.Join(args, " "))
	}
	if typ == "" || name == "" || strings.Contains(name, "/") {
		return Root{}, fmt.Errorf("%q: want TYPE/NAME, such as deployment/web", strings.Join(args, " "))
	}
	gvr, groupResource := schema.ParseResourceArg(strings.ToLower(typ))
	var kind schema.GroupVersionKind
	var err error
	if gvr != nil {
		kind, err = mapper.KindFor(*gvr)
	}
	if gvr == nil || err != nil {
		kind, err = mapper.KindFor(groupResource.WithVersion(""))
	}
	if err != nil {
		return Root{}, fmt.Errorf("the server does not know the type %q: %w", typ, err)
	}
	mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
	if err != nil {
		return Root{}, err
	}
	return Root{Ref: eventtree.ObjectRef{Kind: kind.Kind, Name: name}, Resource: mapping.Resource}, nil
}

// ParseSince reads --since as the server reads history.since: a duration
// back from now, with days (7d, 1d12h), or an RFC 3339 time.
func ParseSince(value string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		if !t.Before(now) {
			return time.Time{}, fmt.Errorf("--since %s: not before now", value)
		}
		return t, nil
	}
	d, err := duration.Parse(value)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("--since %q: want a positive duration (90m, 24h, 7d, 1d12h) or an RFC 3339 time", value)
	}
	return now.Add(-d), nil
}

// TreeSelector selects the events of root's tree observed since start
// (sent as an RFC 3339 time, so that the server's window is the axis's),
// of one type when typ is set.
func TreeSelector(root eventtree.ObjectRef, start time.Time, typ string) fields.Selector {
	terms := []fields.Selector{
		fields.OneTermEqualSelector(FieldAncestor, root.String()),
		fields.OneTermEqualSelector(FieldHistorySince, start.UTC().Format(time.RFC3339)),
	}
	if typ != "" {
		terms = append(terms, fields.OneTermEqualSelector(FieldType, typ))
	}
	return fields.AndSelectors(terms...)
}

// EventPages lists one page of events.
type EventPages func(ctx context.Context, opts metav1.ListOptions) (*eventsv1.EventList, error)

// eventPages lists the namespace's events through version, v1beta1's as
// v1 events (the two versions have the same fields).
func (c *Clients) eventPages(version string) EventPages {
	if version == "v1beta1" {
		return func(ctx context.Context, opts metav1.ListOptions) (*eventsv1.EventList, error) {
			list, err := c.EventsV1beta1.Events(c.Namespace).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			out := &eventsv1.EventList{ListMeta: list.ListMeta, Items: make([]eventsv1.Event, len(list.Items))}
			for i := range list.Items {
				out.Items[i] = fromV1beta1(&list.Items[i])
			}
			return out, nil
		}
	}
	return func(ctx context.Context, opts metav1.ListOptions) (*eventsv1.EventList, error) {
		return c.Events.Events(c.Namespace).List(ctx, opts)
	}
}

// fromV1beta1 is e as an events.k8s.io/v1 event: v1 renamed no field
// that the tree reads.
func fromV1beta1(e *eventsv1beta1.Event) eventsv1.Event {
	out := eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta:               e.ObjectMeta,
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.Regarding,
		Related:                  e.Related,
		Note:                     e.Note,
		Type:                     e.Type,
		DeprecatedSource:         e.DeprecatedSource,
		DeprecatedFirstTimestamp: e.DeprecatedFirstTimestamp,
		DeprecatedLastTimestamp:  e.DeprecatedLastTimestamp,
		DeprecatedCount:          e.DeprecatedCount,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

// ListTreeEvents lists every event selector matches, a page of pageSize at
// a time.
func ListTreeEvents(ctx context.Context, pages EventPages, selector fields.Selector, pageSize int64) ([]eventsv1.Event, error) {
	var events []eventsv1.Event
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return pages(ctx, opts)
	}))
	p.PageSize = pageSize
	err := p.EachListItem(ctx, metav1.ListOptions{FieldSelector: selector.String()}, func(obj runtime.Object) error {
		e, ok := obj.(*eventsv1.Event)
		if !ok {
			return fmt.Errorf("listed a %T, not an event", obj)
		}
		events = append(events, *e)
		return nil
	})
	return events, err
}

// liveObjects lists, metadata only, the objects of every kind in the
// tree, to tell live objects from deleted ones. A kind that cannot be
// mapped or listed (RBAC) is left unknown, with a warning.
func liveObjects(ctx context.Context, clients *Clients, tree *eventtree.Tree, events []eventsv1.Event, root Root, warnings io.Writer) (map[string]bool, []eventtree.LiveObject) {
	apiVersions := map[string]string{}
	for _, e := range events {
		if e.Regarding.APIVersion != "" {
			apiVersions[e.Regarding.Kind] = e.Regarding.APIVersion
		}
	}
	resources := map[string]schema.GroupVersionResource{root.Ref.Kind: root.Resource}
	for _, n := range tree.Nodes() {
		if _, ok := resources[n.Ref.Kind]; ok {
			continue
		}
		gvr, err := resourceOf(clients.Mapper, n.Ref.Kind, apiVersions[n.Ref.Kind])
		if err != nil {
			fmt.Fprintf(warnings, "Warning: not marking deleted %s objects: %v\n", n.Ref.Kind, err)
			continue
		}
		resources[n.Ref.Kind] = gvr
	}
	kindNames := make([]string, 0, len(resources))
	for kind := range resources {
		kindNames = append(kindNames, kind)
	}
	sort.Strings(kindNames)

	kinds := map[string]bool{}
	var objects []eventtree.LiveObject
	for _, kind := range kindNames {
		listed, err := listMetadata(ctx, clients.Metadata.Resource(resources[kind]).Namespace(clients.Namespace))
		if err != nil {
			fmt.Fprintf(warnings, "Warning: not marking deleted %s objects: %v\n", kind, err)
			continue
		}
		kinds[kind] = true
		for _, m := range listed {
			o := eventtree.LiveObject{Ref: eventtree.ObjectRef{Kind: kind, Name: m.Name}, UID: m.UID}
			if owner := metav1.GetControllerOfNoCopy(&m); owner != nil {
				o.Owner = eventtree.ObjectRef{Kind: owner.Kind, Name: owner.Name}
				o.OwnerUID = owner.UID
			}
			objects = append(objects, o)
		}
	}
	return kinds, objects
}

// resourceOf maps a kind to its resource: through the apiVersion an event
// gave, else by the kind's singular name in any group (ReplicaSet is
// apps' replicasets).
func resourceOf(mapper meta.RESTMapper, kind, apiVersion string) (schema.GroupVersionResource, error) {
	if apiVersion != "" {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err == nil {
			if m, err := mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version); err == nil {
				return m.Resource, nil
			}
		}
	}
	return mapper.ResourceFor(schema.GroupVersionResource{Resource: strings.ToLower(kind)})
}

func listMetadata(ctx context.Context, client metadata.ResourceInterface) ([]metav1.PartialObjectMetadata, error) {
	var items []metav1.PartialObjectMetadata
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return client.List(ctx, opts)
	}))
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return errors.New("listed no object metadata")
		}
		items = append(items, *m)
		return nil
	})
	return items, err
}
