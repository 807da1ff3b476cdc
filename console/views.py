from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "console/home.html", {"cluster_name": settings.CLUSTER_NAME})
