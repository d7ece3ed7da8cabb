//go:build tools

// Package engine pins pulumi-kubernetes' provider plugin that `make pulumi-engine` builds
// (tools/pulumi_engine.py) from this module, and the schema package its `go generate` step runs.
package engine

import (
	_ "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
	_ "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)
