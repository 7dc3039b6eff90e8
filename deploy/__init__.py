"""``voice-agent deploy``: plans of AWS calls, an executor over boto3, the IAM policies."""
