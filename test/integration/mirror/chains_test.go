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

package mirror

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// TestMirroredEventsKeepTheChainOfControllerOwners: the mirror's writes go
// through the strategy, so a mirrored event about a CronJob's pod is stored
// with its Job and CronJob, and keeps them when kube-apiserver's copy is
// updated (it has no chain).
func TestMirroredEventsKeepTheChainOfControllerOwners(t *testing.T) {
	ns := newNamespace(t, cluster)
	ctx := testContext(t)
	admin := client(t, cluster)
	template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		RestartPolicy: corev1.RestartPolicyNever,
	}}
	// No controllers run in envtest: the objects are made as they would.
	cj, err := admin.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec:       batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := admin.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-29431", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
		Spec:       batchv1.JobSpec{Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-29431-x", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec:       template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := ownerchain.Encode([]ownerchain.Ancestor{{Kind: "Job", Name: job.Name, UID: job.UID}, {Kind: "CronJob", Name: cj.Name, UID: cj.UID}})

	now := metav1.NewTime(time.Now())
	upstream, err := admin.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod.Name + ".started", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID},
		Reason:         "Started", Message: "Started container c", Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mirrored := waitForV1beta1(t, ns, "regarding.name="+pod.Name, upstream.Name)
	if got := mirrored[0].Annotations[ownerchain.Annotation]; got != want {
		t.Errorf("mirrored event's chain %q, want %q", got, want)
	}

	upstream.Count, upstream.LastTimestamp = 2, metav1.NewTime(time.Now())
	if _, err := admin.CoreV1().Events(ns).Update(ctx, upstream, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var updated *eventsv1beta1.Event
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		updated, err = admin.EventsV1beta1().Events(ns).Get(ctx, upstream.Name, metav1.GetOptions{})
		return err == nil && updated.DeprecatedCount == 2, nil
	}); err != nil {
		t.Fatalf("the update was not mirrored: %v (last %v)", err, updated)
	}
	if got := updated.Annotations[ownerchain.Annotation]; got != want {
		t.Errorf("mirrored update's chain %q, want %q", got, want)
	}
}
