//go:build tools

// Package tools pins the etcd server the playground's real-binary mode runs, built by
// tools/realk8s/build.py (`make real-k8s`). etcd has a module of its own, apart from
// Kubernetes: in one module, minimal version selection would raise the dependencies
// kube-apiserver is released with (etcd client, OpenTelemetry, golang.org/x) to etcd's.
package tools

import _ "go.etcd.io/etcd/server/v3"
