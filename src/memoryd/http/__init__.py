"""The HTTP service: a JSON API (and the owner's web page) over the service object."""
