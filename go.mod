module github.com/zklock/zklock

go 1.26.8

require github.com/go-zookeeper/zk v1.0.4

require (
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
