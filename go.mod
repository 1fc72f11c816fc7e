module github.com/zklock/zklock

go 1.26.8

require github.com/go-zookeeper/zk v1.0.4
