// Package events registers the internal core.Event under the events.k8s.io
// group. The group has no internal type of its own: events.k8s.io/v1beta1
// and v1 convert to and from the same internal Event as core/v1.
package events
