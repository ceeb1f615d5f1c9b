from django.urls import include, path

urlpatterns = [path("queue/", include("robust_queue.urls"))]
