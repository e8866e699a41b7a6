# The OrbitCove gateway: nginx with the routing every environment shares (nginx/routes.conf)
# and the OpenAPI document it serves. Used by docker-compose.yml and deploy/k8s/gateway.yaml.
# Build from the repository root:
#   docker build -f deploy/gateway.Dockerfile -t orbitcove-gateway .
FROM nginx:1.25
COPY deploy/nginx/nginx.container.conf /etc/nginx/nginx.conf
COPY deploy/nginx/routes.conf deploy/nginx/upstreams.container.conf /etc/orbitcove/nginx/
COPY deploy/openapi/openapi.yaml /etc/orbitcove/openapi/
# The official image's nginx user (uid 101); the configuration writes only to /tmp.
USER 101:101
EXPOSE 8080
# nginx answers this one itself, so it says the gateway is up whatever the services do.
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
    CMD ["sh", "-c", "curl -fsS -o /dev/null http://127.0.0.1:8080/api/v1/openapi.yaml || exit 1"]
