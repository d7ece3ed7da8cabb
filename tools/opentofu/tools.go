//go:build tools

// Package opentofu pins the OpenTofu CLI that `make opentofu` builds (tools/opentofu/build.py) from this
// module: go.mod/go.sum decide every dependency's version.
package opentofu

import (
	_ "github.com/opentofu/opentofu/cmd/tofu"
)
