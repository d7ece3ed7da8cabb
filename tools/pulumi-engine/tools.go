//go:build tools

// Package engine pins the Go programs `make pulumi-engine` builds: the Pulumi CLI and
// pulumi-kubernetes' provider plugin. The build (tools/pulumi_engine.py) compiles them
// from this module, so go.mod/go.sum decide every dependency's version.
package engine

import (
	_ "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
	_ "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)
