//go:build tools

// Package tools pins the Kubernetes control plane the playground's real-binary mode runs:
// kube-apiserver, kube-controller-manager and kube-scheduler of k8s.io/kubernetes, built by
// tools/realk8s/build.py (`make real-k8s`). Nothing imports this package; it only keeps the
// commands in go.mod and go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
