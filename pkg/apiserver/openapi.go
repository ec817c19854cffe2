package apiserver

import (
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"

	generatedopenapi "github.com/kube-events/events-apiserver/pkg/generated/openapi"
)

// openAPITitle names the server in its OpenAPI documents.
const openAPITitle = "events-apiserver"

// ApplyOpenAPIConfig sets the OpenAPI v2 and v3 configuration from the
// generated definitions, named with their group-version-kind so that
// kubectl explain finds each served version's schema.
func ApplyOpenAPIConfig(c *genericapiserver.RecommendedConfig) {
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, openapi.NewDefinitionNamer(Scheme))
	c.OpenAPIConfig.Info.Title = openAPITitle
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, openapi.NewDefinitionNamer(Scheme))
	c.OpenAPIV3Config.Info.Title = openAPITitle
}
