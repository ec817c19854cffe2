package app

import (
	"strings"
	"testing"
)

func TestMirrorEnabled(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args      []string
		inCluster bool
		want      bool
	}{
		{name: "auto, standalone: off"},
		{name: "auto, in cluster: on", inCluster: true, want: true},
		{name: "auto with --mirror-kubeconfig: on", args: []string{"--mirror-kubeconfig=/k"}, want: true},
		{name: "auto, delegated with --kubeconfig only: off", args: []string{"--kubeconfig=/k"}},
		{name: "true, standalone: on", args: []string{"--mirror=true"}, want: true},
		{name: "false, in cluster: off", args: []string{"--mirror=false"}, inCluster: true},
		{name: "false with --mirror-kubeconfig: off", args: []string{"--mirror=false", "--mirror-kubeconfig=/k"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.inCluster {
				t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
			} else {
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
			}
			o := parse(t, tt.args...)
			if got := o.Mirror.enabled(); got != tt.want {
				t.Errorf("enabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMirrorValidate(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--mirror=maybe"}, wantErr: "--mirror must be auto, true or false"},
		{args: []string{"--mirror-queue-size=0"}, wantErr: "--mirror-queue-size"},
		{args: []string{"--mirror-qps=0"}, wantErr: "--mirror-qps"},
		{args: []string{"--mirror-burst=0"}, wantErr: "--mirror-burst"},
		{args: []string{"--mirror-workers=0"}, wantErr: "--mirror-workers"},
	} {
		o := parse(t, tt.args...)
		errs := o.Mirror.validate()
		var joined []string
		for _, err := range errs {
			joined = append(joined, err.Error())
		}
		got := strings.Join(joined, "; ")
		if tt.wantErr == "" && got != "" || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
			t.Errorf("%v: errors %q, want %q", tt.args, got, tt.wantErr)
		}
	}
}

func TestMirrorClientConfigNeedsASource(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	o := parse(t, "--mirror=true")
	if _, err := o.mirrorClientConfig(); err == nil || !strings.Contains(err.Error(), "--mirror-kubeconfig") {
		t.Errorf("mirrorClientConfig without any source: err = %v", err)
	}
}
