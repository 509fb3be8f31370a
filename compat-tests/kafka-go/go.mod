module sluice/compat/kafkago

go 1.26.8

require (
	github.com/segmentio/kafka-go v0.4.51
	sluice/compat/gokit v0.0.0
)

replace sluice/compat/gokit => ../gokit
