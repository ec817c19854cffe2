package kubeconfig

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	err := Write(path, Config{
		Name:           "events-apiserver",
		Server:         "https://127.0.0.1:8443",
		CAData:         []byte("ca-pem"),
		ClientCertData: []byte("cert-pem"),
		ClientKeyData:  []byte("key-pem"),
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got file
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "Config" || got.APIVersion != "v1" || got.CurrentContext != "events-apiserver" {
		t.Errorf("header = %+v", got)
	}
	if len(got.Clusters) != 1 || got.Clusters[0].Cluster.Server != "https://127.0.0.1:8443" || string(got.Clusters[0].Cluster.CertificateAuthorityData) != "ca-pem" {
		t.Errorf("clusters = %+v", got.Clusters)
	}
	if len(got.Users) != 1 || string(got.Users[0].User.ClientCertificateData) != "cert-pem" || string(got.Users[0].User.ClientKeyData) != "key-pem" {
		t.Errorf("users = %+v", got.Users)
	}
	if len(got.Contexts) != 1 || got.Contexts[0].Context.Cluster != "events-apiserver" || got.Contexts[0].Context.User != "events-apiserver" {
		t.Errorf("contexts = %+v", got.Contexts)
	}
}

func TestMarshalNeedsNameAndServer(t *testing.T) {
	for _, c := range []Config{{Name: "x"}, {Server: "https://127.0.0.1:1"}} {
		if _, err := Marshal(c); err == nil {
			t.Errorf("Marshal(%+v) succeeded", c)
		}
	}
}
