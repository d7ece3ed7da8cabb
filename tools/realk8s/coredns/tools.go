//go:build tools

// Package tools pins CoreDNS, the cluster DNS addon the playground's real nodes run (the
// image tools/images builds from this binary), built by tools/realk8s/build.py (`make
// real-k8s`). Nothing imports this package; it only keeps the command in go.mod and go.sum.
package tools

import _ "github.com/coredns/coredns"
