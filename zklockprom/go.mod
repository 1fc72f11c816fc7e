module github.com/zklock/zklock/zklockprom

go 1.24

require (
	github.com/prometheus/client_golang v1.0.0
	github.com/prometheus/client_model v0.1.0
	github.com/stretchr/testify v1.12.1
	github.com/zklock/zklock v0.0.0
)

require (
	github.com/beorn7/perks v1.0.0 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	github.com/golang/protobuf v1.3.1 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.1 // indirect
	github.com/prometheus/common v0.4.1 // indirect
	github.com/prometheus/procfs v0.0.2 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.0.0-20181116152217-5ac8a444bdc5 // indirect
)

replace github.com/zklock/zklock => ../
