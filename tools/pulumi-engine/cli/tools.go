//go:build tools

// Package engine pins the Pulumi CLI that `make pulumi-engine` builds (tools/pulumi_engine.py) from
// this module: go.mod/go.sum decide every dependency's version.
package engine

import (
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
)
