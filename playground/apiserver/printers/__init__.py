"""Server-side `meta.k8s.io/v1` Tables, as `kubectl get` asks for them.

kubectl does not format objects itself: it sends `Accept: application/json;as=Table;v=v1;
g=meta.k8s.io` and prints the columns the server returns. This package builds those Tables
the way kube-apiserver's `pkg/printers/internalversion` and the apiextensions table
convertor do, so the emulator prints what a real cluster would:

- `table` is the entry point: it picks a kind's printer and wraps the rows in a Table;
- `columns` holds the Column/Printer types, `fields` reads untyped JSON safely and
  `format` renders durations, ages, labels and selectors like apimachinery;
- one module per family of built-in kinds (`pods`, `core`, `events`, `networking`,
  `apps`, `batch`, `storage`, `rbac`, `cluster`), each exporting `PRINTERS`;
- `custom` evaluates a CRD's additionalPrinterColumns with JSONPath.
"""
