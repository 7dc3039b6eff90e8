"""A local SageMaker ``InvokeEndpointWithBidirectionalStream`` emulator (Python >= 3.12)."""
