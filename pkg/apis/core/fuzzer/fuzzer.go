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

// Package fuzzer holds the randfill functions that round-trip tests use to
// fill the internal Event with random values, normalised so that they only
// produce internal objects the served versions can carry without loss.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// Funcs returns the fuzzer functions for the internal Event. Use them merged
// with apimachinery's metafuzzer.Funcs (roundtrip.RoundTripTestForAPIGroup
// does that), which keep TypeMeta empty in memory and ObjectMeta's times at
// the precision JSON keeps. metav1.Time and metav1.MicroTime fill themselves
// (their RandFill methods) with whole seconds and whole microseconds, the
// precision of firstTimestamp/lastTimestamp and eventTime on the wire, so no
// time needs normalising here.
//
// Each normalisation below is a value the internal type can hold but no
// served version can express, by design:
//
//   - DeprecatedHost is always empty. It is not an event field: conversion
//     from events.k8s.io/v1beta1 sets it only when a write's deprecatedHost
//     disagrees with deprecatedSource.host, to carry that conflict to
//     validation, which rejects the write. Every version reads the host from
//     Source.Host (v1beta1 shows it as both deprecatedSource.host and
//     deprecatedHost), so the conflict value never comes back out.
//   - An empty ReportingController is Source.Component. events.k8s.io shows a
//     legacy event's source.component as reportingController when the event
//     has none of its own, and reads that value back as the event's
//     ReportingController; only events whose ReportingController is set, or
//     whose Source.Component is empty, are fixed points of every version.
func Funcs(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(e *core.Event, c randfill.Continue) {
			c.FillNoCustom(e)
			e.DeprecatedHost = ""
			if e.ReportingController == "" {
				e.ReportingController = e.Source.Component
			}
		},
	}
}
