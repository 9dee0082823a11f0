"""The study beside jaxperf."""
