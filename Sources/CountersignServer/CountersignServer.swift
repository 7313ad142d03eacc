public enum CountersignServerModule {}
