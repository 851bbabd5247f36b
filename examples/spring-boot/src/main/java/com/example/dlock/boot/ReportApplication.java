package com.example.dlock.boot;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A Spring Boot application whose nightly report runs on one instance at a time.
 *
 * <pre>{@code
 * java -jar app.jar --dlock.uri=zookeeper://127.0.0.1:2181/reports
 * }</pre>
 */
@SpringBootApplication
public class ReportApplication {
    public static void main(String[] args) {
        SpringApplication.run(ReportApplication.class, args);
    }
}
