public enum CountersignClientModule {}
