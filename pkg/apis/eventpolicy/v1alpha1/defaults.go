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

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Defaults. The limits let a healthy cluster's reporters (a kubelet on node
// restart, a controller reconciling hundreds of objects) stay well within
// them, and a 2-core server takes their sum; a storming reporter is held to
// 20 writes/s. Folding is like client-go's legacy aggregator (10 similar
// events in 10 minutes), and writes a hot series at most once a second
// (the longest group-commit window). The series thresholds are client-go's
// tools/events recorder's (v0.37); the slack covers a heartbeat late by up
// to one finish cycle.
const (
	DefaultLimitCacheSize    = 4096
	DefaultFoldAfter         = 10
	DefaultFoldWindow        = 10 * time.Minute
	DefaultFoldFlushInterval = time.Second
	DefaultFoldCacheSize     = 4096
	DefaultFinishAfter       = 6 * time.Minute
	DefaultHeartbeatInterval = 30 * time.Minute
	DefaultHeartbeatSlack    = 6 * time.Minute
	DefaultSweepInterval     = time.Minute
	// DefaultExportQPS and DefaultExportBurst bound the states of one
	// namespace the OTLP export sends.
	DefaultExportQPS   = 100
	DefaultExportBurst = 1000
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_EventPolicy gives a policy without limits the default ones.
func SetDefaults_EventPolicy(obj *EventPolicy) {
	if obj.Limits == nil {
		obj.Limits = []Limit{
			{Type: "Reporter", QPS: 20, Burst: 200},
			{Type: "Object", QPS: 10, Burst: 100},
			{Type: "Namespace", QPS: 200, Burst: 2000},
		}
	}
}

// SetDefaults_Limit keeps DefaultLimitCacheSize buckets unless told.
func SetDefaults_Limit(obj *Limit) {
	if obj.CacheSize == 0 {
		obj.CacheSize = DefaultLimitCacheSize
	}
}

// SetDefaults_Folding turns folding on with the default thresholds.
func SetDefaults_Folding(obj *Folding) {
	if obj.Enabled == nil {
		obj.Enabled = ptr.To(true)
	}
	if obj.After == nil {
		obj.After = ptr.To[int32](DefaultFoldAfter)
	}
	if obj.Window == nil {
		obj.Window = &metav1.Duration{Duration: DefaultFoldWindow}
	}
	if obj.FlushInterval == nil {
		obj.FlushInterval = &metav1.Duration{Duration: DefaultFoldFlushInterval}
	}
	if obj.CacheSize == nil {
		obj.CacheSize = ptr.To[int32](DefaultFoldCacheSize)
	}
}

// SetDefaults_Series sets client-go's thresholds and a sweep a minute.
func SetDefaults_Series(obj *Series) {
	for _, d := range []struct {
		field **metav1.Duration
		value time.Duration
	}{
		{&obj.FinishAfter, DefaultFinishAfter},
		{&obj.HeartbeatInterval, DefaultHeartbeatInterval},
		{&obj.HeartbeatSlack, DefaultHeartbeatSlack},
		{&obj.SweepInterval, DefaultSweepInterval},
	} {
		if *d.field == nil {
			*d.field = &metav1.Duration{Duration: d.value}
		}
	}
}

// SetDefaults_Export bounds each namespace's export to the default rate.
func SetDefaults_Export(obj *Export) {
	if obj.NamespaceRate == nil {
		obj.NamespaceRate = &ExportRate{QPS: DefaultExportQPS, Burst: DefaultExportBurst}
	}
}
