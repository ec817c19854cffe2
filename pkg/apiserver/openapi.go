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
