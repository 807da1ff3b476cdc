"""The console's sign-in with Pinot's principals (``controller.admin.access.control.*``), the
same user names and passwords that scripts send as ``Authorization: Basic``."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth.views import LoginView
from django.http import HttpResponseRedirect

from cluster.api.access import sign_in


class PrincipalLoginForm(forms.Form):
    username = forms.CharField(max_length=256)
    password = forms.CharField(widget=forms.PasswordInput, strip=False, max_length=1024)

    def __init__(self, request=None, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.request = request
        self.principal = None

    def clean(self) -> dict:
        data = super().clean()
        access = settings.ACCESS_CONTROL
        if access is not None and "username" in data and "password" in data:
            self.principal = access.login(data["username"], data["password"])
        if self.principal is None:
            raise forms.ValidationError("Wrong username or password.")
        return data

    def get_user(self):
        return self.principal


class ConsoleLoginView(LoginView):
    template_name = "console/login.html"
    authentication_form = PrincipalLoginForm
    redirect_authenticated_user = True
    next_page = "console-query"

    def form_valid(self, form: PrincipalLoginForm) -> HttpResponseRedirect:
        sign_in(self.request, form.get_user())
        return HttpResponseRedirect(self.get_success_url())
