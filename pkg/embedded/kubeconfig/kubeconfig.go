// Package kubeconfig writes the kubeconfig a standalone events-apiserver
// hands to its administrator: one cluster, one user authenticating with a
// client certificate, one context, current.
package kubeconfig

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
)

// Config describes the kubeconfig to write.
type Config struct {
	// Name names the cluster, the user and the context.
	Name string
	// Server is the https URL of the API server.
	Server string
	// CAData is the PEM bundle that verifies the server's certificate; empty
	// means the system roots.
	CAData []byte
	// ClientCertData and ClientKeyData are the user's PEM certificate and key.
	ClientCertData []byte
	ClientKeyData  []byte
}

// The kubeconfig file format (clientcmd/api/v1), only what is written here.
type file struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
}

type namedCluster struct {
	Name    string  `json:"name"`
	Cluster cluster `json:"cluster"`
}

type cluster struct {
	Server                   string `json:"server"`
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
}

type namedUser struct {
	Name string `json:"name"`
	User user   `json:"user"`
}

type user struct {
	ClientCertificateData []byte `json:"client-certificate-data"`
	ClientKeyData         []byte `json:"client-key-data"`
}

type namedContext struct {
	Name    string  `json:"name"`
	Context context `json:"context"`
}

type context struct {
	Cluster string `json:"cluster"`
	User    string `json:"user"`
}

// Marshal renders the kubeconfig as YAML; byte slices are base64 encoded,
// as the format wants.
func Marshal(c Config) ([]byte, error) {
	if c.Name == "" || c.Server == "" {
		return nil, fmt.Errorf("kubeconfig needs a name and a server")
	}
	return yaml.Marshal(file{
		APIVersion:     "v1",
		Kind:           "Config",
		Clusters:       []namedCluster{{Name: c.Name, Cluster: cluster{Server: c.Server, CertificateAuthorityData: c.CAData}}},
		Users:          []namedUser{{Name: c.Name, User: user{ClientCertificateData: c.ClientCertData, ClientKeyData: c.ClientKeyData}}},
		Contexts:       []namedContext{{Name: c.Name, Context: context{Cluster: c.Name, User: c.Name}}},
		CurrentContext: c.Name,
	})
}

// Write writes the kubeconfig to path, readable by its owner only (it holds
// a private key), replacing any previous one at once.
func Write(path string, c Config) error {
	data, err := Marshal(c)
	if err != nil {
		return err
	}
	return pki.WriteFileAtomic(path, data, 0o600)
}
