"""The offloading module's controllers: on a consumer, each VirtualNode's virtual kubelet (`virtualnode`)."""
