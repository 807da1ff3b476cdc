"""Controller-side logic of consumer-lag monitoring, shared by the REST views and the periodic
alert evaluation (Django lives here and in api/, never in the plain modules)."""
