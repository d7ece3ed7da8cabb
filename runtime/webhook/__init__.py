"""The admission webhook: validation of the runtime's kinds that CRD schemas cannot express
(or that API servers without CEL skip), served over HTTPS with a certificate it makes itself.

| module | job |
| --- | --- |
| `review.py` | AdmissionReview v1 parsing and responses |
| `foreignclusters.py`, `resourceslices.py` | one pure validator per kind |
| `app.py` | routes: path -> validator |
| `certs.py` | the serving certificate and the CA every replica shares |
| `authority.py` | that CA, kept in a Secret |
| `configuration.py` | patching the CA (and URL) into the webhook configurations |
| `server.py`, `main.py` | the running service and its command line |
"""
